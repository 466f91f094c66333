// Limits (DESIGN.md "Gateway pipeline" / Limits), all checked synchronously in memory.
//
//   rate      per_minute token bucket (+burst), per_hour / per_day sliding windows  -> limits/rate.ts,
//             per key, restored after a restart or a crash                          -> limits/key-rates.ts
//   usage     budgets daily / monthly (UTC calendar) / total -> 402 budget_exceeded; tokens daily /
//             monthly / per_request_max and temporary keys' max_requests -> 402 quota_exceeded;
//             counted on the key, its team and its organization     -> limits/usage.ts, limits/checks.ts
//   persist   counters and rate windows saved each second and at close              -> limits/persist.ts
//   durable   write-ahead Reservation rows, group-committed before answering        -> limits/wal.ts
// Reservation: a request is admitted while the committed amount (settled + reserved by requests
// in flight) is under the limit; it then reserves its estimate (prompt estimate + output reserve
// at the most expensive candidate's price) until it settles with the actual usage. So at the
// end spend < limit + the last admitted reservation + what requests in flight at that moment
// billed above their own reservations (engines/gateway/README.md "Crash guarantees").
// A refusal is thrown as a LimitRefusal that names the limit (limits/refusal.ts).
import type Database from "better-sqlite3";
import type { PrismaClient } from "../../prisma/client";
import { keyState, type KeyCache, type KeyEntry, teamKey } from "./keys";
import { KeyRates } from "./limits/key-rates";
import { EntityUsage, PeriodCounter, effectiveLimits, type EffectiveLimits } from "./limits/usage";
import { LimitRefusal } from "./limits/refusal";
import { flushDirect, flushPrisma, loadDirect, loadPrisma, type FlushSet, type LoadedState } from "./limits/persist";
import { WriteAhead, recover } from "./limits/wal";
import { checksOf, usageOver } from "./limits/checks";
import { installShared, syncShared, type SharedHold, type SharedLimitStore } from "./limits/shared";

export { effectiveLimits, usd, EntityUsage, type EffectiveLimits } from "./limits/usage";
export { LimitRefusal } from "./limits/refusal";

/** One admitted request's hold on counters, released by settle(). */
export interface Admission {
  entities: EntityUsage[];
  /** the period counters this admission counted a request in (day, month, total per entity) */
  counters: PeriodCounter[];
  spend: number;
  tokens: number;
  settled: boolean;
  /** the Reservation row id, when the admission was written ahead */
  rowId?: number;
  /** shared mode: resolves once the shared store admitted and reserved; forward only after it
   * (it may refuse: a LimitRefusal, or 503 when the store is down) */
  durable?: Promise<void>;
  /** write-ahead: resolves once the Reservation row is committed (end of this event-loop turn).
   * The request may go upstream meanwhile; its answer waits for this (limits/wal.ts) */
  written?: Promise<void>;
  /** scale-out: the hold on the shared limit store (limits/shared.ts) */
  shared?: SharedHold;
}

export interface Estimate {
  /** reserved spend in micro-USD */
  spend: number;
  /** reserved tokens (prompt estimate + output reserve) */
  tokens: number;
  /** prompt estimate + explicit max_tokens (for per_request_max) */
  requestTokens: number;
  /** prompt estimate (the audit row a crash recovery writes) */
  promptTokens?: number;
  /** model has a price (a budgeted key needs one) */
  priced: boolean;
  model: string;
}

/** The parts of the audit log (audit/log.ts) a flush needs. */
export interface AuditDrain {
  readonly writing: boolean;
  idle(): Promise<void>;
  drainSync(): void;
}

/** What a write-ahead row records of the request (for the audit row recovery may write). */
export interface RequestInfo {
  requestId: string;
  action: string;
  ip?: string;
}

export class Limits {
  private usage = new Map<string, EntityUsage>();
  private readonly rates: KeyRates;
  /** Reservation rows of settled requests, deleted by the next flush */
  private settledRows: number[] = [];
  private readonly sqlite?: Database.Database;
  private readonly wal?: WriteAhead;
  private readonly audit?: () => AuditDrain | undefined;
  private readonly writesPaused?: () => Promise<void> | undefined;
  private effCache = new WeakMap<KeyEntry, EffectiveLimits>();
  private dirty = new Set<PeriodCounter>();
  private dayP = "";
  private monthP = "";
  private nextDayAt = 0;
  private timer: NodeJS.Timeout | null = null;
  // scale-out (useShared): `declare`d, so an embedded instance has exactly the fields it had before
  /** limits kept in a store shared by replicas (Redis) instead of in memory */
  declare shared?: SharedLimitStore;
  /** this replica writes the shared counters to the database (the lease holder) */
  declare mirror?: () => boolean;
  private flushing: Promise<void> = Promise.resolve();
  readonly now: () => number;

  constructor(
    private prisma: PrismaClient,
    readonly keys: KeyCache,
    opts: {
      now?: () => number;
      flushMs?: number;
      /** the direct SQLite handle: persistence and the write-ahead log go through it */
      sqlite?: Database.Database;
      /** the audit log, drained inside each flush (write-ahead rows go only with their audit rows) */
      audit?: () => AuditDrain | undefined;
      /** a promise while a background checkpoint runs (prisma/checkpointer.ts) */
      writesPaused?: () => Promise<void> | undefined;
    } = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.rates = new KeyRates((k) => this.limitsOf(k));
    this.sqlite = opts.sqlite;
    this.audit = opts.audit;
    this.writesPaused = opts.writesPaused;
    if (opts.sqlite) this.wal = new WriteAhead(opts.sqlite);
    this.periods(this.now());
    if (opts.flushMs !== 0) {
      this.timer = setInterval(() => void this.flush().catch(() => undefined), opts.flushMs ?? 1000);
      this.timer.unref();
    }
  }

  /** Fold in what a crash left (write-ahead rows), then load the current periods' counters and
   * the rate windows, so neither a restart nor a kill -9 hands a key a fresh allowance. */
  async load(): Promise<{ recovered: number }> {
    const now = this.now();
    this.periods(now);
    let recovered = 0;
    if (this.sqlite) {
      const r = recover(this.sqlite);
      recovered = r.rows;
      this.rates.replay = r.admissions;
    }
    const periods = [this.dayP, this.monthP, "total"];
    const st: LoadedState = this.sqlite ? loadDirect(this.sqlite, periods) : await loadPrisma(this.prisma, periods);
    this.rates.loadSaved(st.rates);
    for (const r of st.counters) {
      const u = this.entity(r.keyId);
      const c = r.period === "total" ? u.total : r.period === this.dayP ? u.day : u.month;
      c.spend = Number(r.spendMicros);
      c.tokens = Number(r.tokens);
      c.requests = Number(r.requests);
    }
    return { recovered };
  }

  private periods(now: number) {
    if (now < this.nextDayAt) return;
    const d = new Date(now);
    const iso = d.toISOString();
    this.dayP = "day:" + iso.slice(0, 10);
    this.monthP = "month:" + iso.slice(0, 7);
    this.nextDayAt = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1);
  }

  /** The usage record of an entity, rolled over to the current day/month. */
  entity(id: string): EntityUsage {
    let u = this.usage.get(id);
    if (!u) {
      u = new EntityUsage(id, this.dayP, this.monthP);
      this.usage.set(id, u);
    } else {
      if (u.day.period !== this.dayP) u.day = new PeriodCounter(id, this.dayP);
      if (u.month.period !== this.monthP) u.month = new PeriodCounter(id, this.monthP);
    }
    return u;
  }

  limitsOf(k: KeyEntry): EffectiveLimits {
    let e = this.effCache.get(k);
    if (!e) {
      e = effectiveLimits(k);
      this.effCache.set(k, e);
    }
    return e;
  }

  /** Scale-out: entities whose shared counters this replica follows (every key's when `all`). */
  sharedEntities(all: boolean): string[] {
    if (all) for (const k of this.keys.all()) if (k.role === "key") this.entitiesOf(k);
    return [...this.usage.keys()];
  }

  periodNames(): [string, string] {
    this.periods(this.now());
    return [this.dayP, this.monthP];
  }

  /** Usage entities a key's requests count toward: key, team, organization. */
  entitiesOf(k: KeyEntry): { own: EntityUsage; team?: EntityUsage; org?: EntityUsage } {
    const s = k.spec;
    const own = this.entity(k.id);
    const team = s.team_id && (s.key_type === "team" || s.key_type === "user") ? this.entity("team:" + teamKey(s.organization_id, s.team_id)) : undefined;
    const org = s.organization_id ? this.entity("org:" + s.organization_id) : undefined;
    return { own, team, org };
  }

  /** Team and organization keys whose budgets cover this key's usage (the roll-up), active ones:
   * their budget-threshold alerts follow the spend of every member key. */
  budgetKeysAbove(k: KeyEntry, now = this.now()): KeyEntry[] {
    const s = k.spec;
    const out: KeyEntry[] = [];
    if (s.key_type === "user" && s.team_id) {
      for (const t of this.keys.teamKeysOf(s.organization_id, s.team_id)) if (this.limitsOf(t).budgeted && keyState(t, now) === "active") out.push(t);
    }
    if (s.organization_id && s.key_type !== "organization") {
      for (const o of this.keys.orgKeysOf(s.organization_id)) if (this.limitsOf(o).budgeted && keyState(o, now) === "active") out.push(o);
    }
    return out;
  }

  /** Does this key (or a team/org key above it) have a budget? Then only priced models are allowed. */
  needsPrice(k: KeyEntry, now = this.now()): boolean {
    if (this.limitsOf(k).budgeted) return true;
    const ents = this.entitiesOf(k);
    for (const c of checksOf(k, ents, now, this.keys, (x) => this.limitsOf(x))) if (c.lim.budgeted) return true;
    return false;
  }

  /**
   * Check every limit of the key and, when all pass, take a rate slot and reserve the estimate.
   * Throws a LimitRefusal (429 / 402) naming the limit that tripped. When any limit applies, the
   * admission is written ahead: await `written` before answering (forwarding may start first).
   */
  admit(k: KeyEntry, est: Estimate, now = this.now(), info?: RequestInfo): Admission {
    this.periods(now);
    const lim = this.limitsOf(k);

    // rate limits: check all before consuming any
    const st = this.rates.check(k, lim, now);

    const ents = this.entitiesOf(k);
    const checks = checksOf(k, ents, now, this.keys, (x) => this.limitsOf(x));

    if (lim.maxRequests !== undefined && ents.own.total.requests >= lim.maxRequests) {
      throw this.err(k, now, "quota_exceeded", `max_requests=${lim.maxRequests}`, `request quota max_requests=${lim.maxRequests} of this key is used up`);
    }
    if (lim.tokensPerRequest !== undefined && est.requestTokens > lim.tokensPerRequest) {
      throw this.err(k, now, "quota_exceeded", `per_request_max=${lim.tokensPerRequest}`, `token limit per_request_max=${lim.tokensPerRequest} exceeded (prompt estimate plus max_tokens is ${est.requestTokens})`);
    }
    const over = usageOver(checks);
    if (over) throw this.err(k, now, over.code, over.limit, over.message);

    // admitted: consume and reserve
    if (st) this.rates.consume(k.id, st, now);
    // Write ahead only what a crash could hand back: keys without any limit take the fast path.
    const ahead = this.wal && (st !== null || checks.length > 0 || lim.maxRequests !== undefined);
    const entities = [ents.own];
    if (ents.team) entities.push(ents.team);
    if (ents.org) entities.push(ents.org);
    const counters: PeriodCounter[] = [];
    for (const u of entities) {
      u.reservedSpend += est.spend;
      u.reservedTokens += est.tokens;
      u.day.requests++;
      u.month.requests++;
      u.total.requests++;
      if (ahead) {
        u.day.inflight++;
        u.month.inflight++;
        u.total.inflight++;
      }
      counters.push(u.day, u.month, u.total);
      this.dirty.add(u.day).add(u.month).add(u.total);
    }
    const adm: Admission = { entities, counters, spend: est.spend, tokens: est.tokens, settled: false };
    if (ahead) {
      const wal = this.wal!;
      adm.rowId = wal.nextId();
      adm.written = wal.add({
        id: adm.rowId,
        keyId: k.id,
        entities: entities.map((u) => u.id),
        day: this.dayP,
        month: this.monthP,
        spend: est.spend,
        promptTokens: est.promptTokens ?? 0,
        tokens: est.tokens,
        at: now,
        requestId: info?.requestId ?? `res_${adm.rowId}`,
        action: info?.action ?? "chat.completions",
        model: est.model || null,
        keyName: k.name ?? null,
        organizationId: k.spec.organization_id ?? null,
        ip: info?.ip ?? null,
      });
    }
    return adm;
  }

  /** Scale-out: from now on every limit is checked and reserved in the shared store
   * (limits/shared.ts installShared; the embedded path keeps the prototype's code untouched). */
  useShared(store: SharedLimitStore, mirror: () => boolean): void {
    this.shared = store;
    this.mirror = mirror;
    installShared(this, store);
  }

  /** x-ratelimit-* headers for a key (the per_minute bucket, else the hour, else the day window). */
  rateHeaders(k: KeyEntry, now = this.now()): Record<string, string> {
    return this.rates.headers(k, now);
  }

  private err(k: KeyEntry, now: number, code: "quota_exceeded" | "budget_exceeded", limit: string, msg: string) {
    return new LimitRefusal(402, code, limit, msg, this.rateHeaders(k, now));
  }

  /**
   * Release the reservation and count what was actually used. `served: false` (the request
   * failed before any output) also gives the request back (max_requests counts served requests).
   */
  settle(a: Admission, spend: number, tokens: number, served: boolean): void {
    if (a.settled) return;
    a.settled = true;
    this.periods(this.now());
    for (const u0 of a.entities) {
      const u = this.entity(u0.id);
      u.reservedSpend -= a.spend;
      u.reservedTokens -= a.tokens;
      if (spend || tokens) {
        u.day.spend += spend;
        u.month.spend += spend;
        u.total.spend += spend;
        u.day.tokens += tokens;
        u.month.tokens += tokens;
        u.total.tokens += tokens;
      }
      this.dirty.add(u.day).add(u.month).add(u.total);
    }
    // the request counts stay where admission put them (the periods it was admitted in)
    for (const c of a.counters) {
      if (a.rowId) c.inflight--;
      if (!served) c.requests--;
      this.dirty.add(c);
    }
    if (a.rowId) this.settledRows.push(a.rowId);
  }

  /** A key's month-to-date spend in micro-USD (policy conditions, alerts). */
  monthSpend(k: KeyEntry): number {
    return this.entity(k.id).month.spend;
  }

  /** Settled spend (micro-USD) of the usage a key's own budgets apply to (team key: its team's). */
  spendOf(k: KeyEntry): { day: number; month: number; total: number } {
    this.periods(this.now());
    const ents = this.entitiesOf(k);
    const s = k.spec;
    const u = s.key_type === "team" && ents.team ? ents.team : s.key_type === "organization" && ents.org ? ents.org : ents.own;
    return { day: u.day.spend, month: u.month.spend, total: u.total.spend };
  }

  /** Usage of a key for the key routes (settled amounts). */
  report(id: string) {
    const u = this.entity(id);
    return {
      today: { spend_usd: u.day.spend / 1e6, tokens: u.day.tokens, requests: u.day.requests },
      month: { spend_usd: u.month.spend / 1e6, tokens: u.month.tokens, requests: u.month.requests },
      total: { spend_usd: u.total.spend / 1e6, tokens: u.total.tokens, requests: u.total.requests },
    };
  }

  /** Persist changed counters and rate windows; drop the write-ahead rows of settled requests. */
  flush(): Promise<void> {
    const run = this.flushing.then(() => this.doFlush());
    this.flushing = run.catch(() => undefined);
    return run;
  }

  private async doFlush() {
    if (this.shared) return syncShared(this.shared, this, this.mirror?.() ? (counters) => flushPrisma(this.prisma, { counters, rates: [], gone: [], settled: [] }) : undefined);
    if (this.dirty.size === 0 && !this.rates.changed() && this.settledRows.length === 0) return;
    const paused = this.writesPaused?.();
    if (paused) await paused;
    // An audit batch being written holds rows that are neither queued nor on disk: wait for it,
    // then snapshot and commit without yielding (drainSync refuses if one started meanwhile).
    const audit = this.audit?.();
    for (let i = 0; audit?.writing && i < 20; i++) await audit.idle().catch(() => undefined);
    // Snapshot synchronously: the values, the rate windows and the settled rows of one instant.
    const counters = [...this.dirty];
    this.dirty.clear();
    const settled = this.settledRows;
    this.settledRows = [];
    const nowMs = this.now();
    const { rates, gone, ids: rateIds } = this.rates.takeChanged(nowMs);
    const f: FlushSet = { counters, rates, gone, settled };
    try {
      if (this.sqlite?.open) flushDirect(this.sqlite, f, audit && (() => audit.drainSync()));
      else if (!this.sqlite) await flushPrisma(this.prisma, f);
      else throw new Error("database closed");
    } catch (e) {
      for (const r of counters) this.dirty.add(r); // retry at the next flush
      this.rates.markChanged(rateIds);
      this.settledRows = settled.concat(this.settledRows);
      throw e;
    }
  }

  /** Forget a deleted key's rate state (usage rows stay for audit). */
  forget(id: string) {
    this.rates.forget(id);
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.wal?.commit();
    await this.flush();
  }
}
