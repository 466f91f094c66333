// Limits (docs/architecture.md "The gate"; decisions in engines/gateway/README.md), all checked synchronously in memory.
//
//   rate      per_minute token bucket (+burst), per_hour / per_day sliding windows  -> limits/rate.ts,
//             per key, restored after a restart or a crash                          -> limits/key-rates.ts
//   usage     budgets daily / monthly (UTC calendar) / total -> 402 budget_exceeded; tokens daily /
//             monthly / per_request_max and temporary keys' max_requests -> 402 quota_exceeded;
//             counted on the key, its team and its organization     -> limits/usage.ts, limits/checks.ts,
//             rolled up and read per entity (Limits extends UsageRollup)            -> limits/rollup.ts
//   persist   counters and rate windows saved each second and at close, through the store's
//             limits repository (prisma/repos)                                      -> limits/persist.ts
//   durable   write-ahead journal of reservations, group-written before answering   -> limits/wal.ts
// Reservation: a request is admitted while the committed amount (settled + reserved by requests
// in flight) is under the limit; it then reserves its estimate (prompt estimate + output reserve
// at the most expensive candidate's price) until it settles with the actual usage. So at the
// end spend < limit + the last admitted reservation + what requests in flight at that moment
// billed above their own reservations (engines/gateway/README.md "Crash guarantees").
// A refusal is thrown as a LimitRefusal that names the limit (limits/refusal.ts).
import type { LimitsRepo } from "../../prisma/repos/types";
import type { KeyCache, KeyEntry } from "./keys";
import { KeyRates } from "./limits/key-rates";
import type { PeriodCounter } from "./limits/usage";
import { UsageRollup } from "./limits/rollup";
import { LimitRefusal } from "./limits/refusal";
import { LimitsPersistence, type AuditDrain } from "./limits/persist";
import { checksOf, usageOver } from "./limits/checks";
import { sharedAdmission, type SharedLimitStore } from "./limits/shared";
import type { Admission, AdmissionStrategy, Estimate, RequestInfo } from "./limits/types";
import type { RateState } from "../errors";
import { rateBetween, type ExchangeRate } from "../../schemas/kinds/currency";
import { toKeyCurrency } from "./limits/currency";

export { effectiveLimits, usd, EntityUsage, type EffectiveLimits } from "./limits/usage";
export { LimitRefusal } from "./limits/refusal";
export type { AuditDrain } from "./limits/persist";

export type { Admission, Estimate, RequestInfo } from "./limits/types";

export class Limits extends UsageRollup {
  private readonly rates: KeyRates;
  private readonly store: LimitsPersistence;
  /** counters changed since the last flush (the store's) */
  private readonly dirty: Set<PeriodCounter>;
  private timer: NodeJS.Timeout | null = null;
  /** embedded (this process's memory, the default) or shared by replicas (useShared) */
  private strategy: AdmissionStrategy;
  /** a request was admitted: the strategy is settled for good */
  private serving = false;
  private flushing: Promise<void> = Promise.resolve();
  private readonly exchangeRates: () => readonly ExchangeRate[] | undefined;
  /** needsPrice, made once: no closure per converted request */
  private readonly budgetedAt = (k: KeyEntry, now: number) => this.needsPrice(k, now);

  /** `repo`: the store's limits repository (OpenedDb.repos.limits); on SQLite's direct handle
   * (its `sync` side) admissions are also written ahead (limits/wal.ts). */
  constructor(
    repo: LimitsRepo,
    keys: KeyCache,
    opts: {
      now?: () => number;
      flushMs?: number;
      /** the audit log, drained inside each flush (write-ahead rows go only with their audit rows) */
      audit?: () => AuditDrain | undefined;
      /** a promise while a background checkpoint runs (prisma/checkpointer.ts) */
      writesPaused?: () => Promise<void> | undefined;
      /** Server.spec.exchangeRates, read live */
      exchangeRates?: () => readonly ExchangeRate[] | undefined;
    } = {},
  ) {
    super(keys, opts.now ?? Date.now);
    this.exchangeRates = opts.exchangeRates ?? (() => undefined);
    this.rates = new KeyRates((k) => this.limitsOf(k));
    this.store = new LimitsPersistence(repo, this.rates, { now: this.now, audit: opts.audit, writesPaused: opts.writesPaused });
    this.dirty = this.store.dirty;
    this.strategy = {
      admit: (k, est, now, info) => this.admitHere(k, est, now, info),
      settle: (a, spend, tokens, served) => this.settleHere(a, spend, tokens, served),
      rate: (k, now) => this.rates.window(k, now),
      flush: () => this.store.write(),
    };
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
    const { recovered, state } = await this.store.load([this.dayP, this.monthP, "total"]);
    for (const r of state.counters) {
      const u = this.entity(r.keyId);
      const c = r.period === "total" ? u.total : r.period === this.dayP ? u.day : u.month;
      c.spend = Number(r.spendMicros);
      c.tokens = Number(r.tokens);
      c.requests = Number(r.requests);
    }
    return { recovered };
  }

  /**
   * Check every limit of the key and, when all pass, take a rate slot and reserve the estimate.
   * Throws a LimitRefusal (429 / 402) naming the limit that tripped. When any limit applies, the
   * admission is written ahead: await `written` before answering (forwarding may start first).
   */
  admit(k: KeyEntry, est: Estimate, now = this.now(), info?: RequestInfo): Admission {
    this.serving = true;
    return this.strategy.admit(k, est, now, info);
  }

  /** The embedded strategy's admission: every check and reservation in this process's memory. */
  private admitHere(k: KeyEntry, est0: Estimate, now: number, info?: RequestInfo): Admission {
    this.periods(now);
    const { est, rate } = this.inKeyCurrency(k, est0, now);
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
    const over = est.unbudgeted ? null : usageOver(checks, est.known ? est.spend : 0);
    if (over) throw this.err(k, now, over.code, over.limit, over.message);

    // admitted: consume and reserve
    if (st) this.rates.consume(k.id, st, now);
    // Write ahead only what a crash could hand back: keys without any limit take the fast path.
    const wal = this.store.wal;
    const ahead = wal && (st !== null || checks.length > 0 || lim.maxRequests !== undefined);
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
    if (rate !== 1) adm.rate = rate;
    if (ahead) {
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

  /** Spend of a request in the key's budget currency (limits/currency.ts); throws when a budgeted
   * key has no declared rate from the price currency: never counted at a wrong rate. */
  inKeyCurrency(k: KeyEntry, est: Estimate, now = this.now()): { est: Estimate; rate: number } {
    return toKeyCurrency(k, est, this.exchangeRates(), this.budgetedAt, now);
  }

  /** A price (micro-units of `currency`) in USD micro-units, for the audit log's cost_usd and the
   * spend metric. Plan/apply refuses a priced Provider in another currency without a rate to USD
   * (manifests/currencies.ts), so the fallback (the amount as it is) is not reached by a valid state. */
  usd(micros: number, currency: string | undefined): number {
    if (!currency || currency === "USD" || micros === 0) return micros;
    const rate = rateBetween(this.exchangeRates(), currency, "USD");
    return rate === undefined ? micros : Math.round(micros * rate);
  }

  /** Scale-out: every limit is checked and reserved in the shared store (limits/shared.ts), chosen
   * once at start-up, before the first request (engines/cluster); `mirror`: this replica writes
   * the shared counters to the database (the lease holder). */
  useShared(store: SharedLimitStore, mirror: () => boolean): void {
    if (this.serving) throw new Error("limits: the shared store must be chosen before the first request is admitted");
    this.strategy = sharedAdmission(this, store, () => (mirror() ? (counters) => this.store.saveCounters(counters) : undefined));
  }

  /** x-ratelimit-* headers for a key (the per_minute bucket, else the hour, else the day window). */
  rate(k: KeyEntry, now = this.now()): RateState | undefined {
    return this.strategy.rate(k, now);
  }

  private err(k: KeyEntry, now: number, code: "quota_exceeded" | "budget_exceeded", limit: string, msg: string) {
    return new LimitRefusal(code, limit, msg, this.rate(k, now));
  }

  /**
   * Release the reservation and count what was actually used. `served: false` (the request
   * failed before any output) also gives the request back (max_requests counts served requests).
   */
  settle(a: Admission, spend: number, tokens: number, served: boolean): void {
    this.strategy.settle(a, spend, tokens, served);
  }

  private settleHere(a: Admission, spend0: number, tokens: number, served: boolean): void {
    if (a.settled) return;
    a.settled = true;
    const spend = a.rate === undefined ? spend0 : Math.ceil(spend0 * a.rate);
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
    if (a.rowId) this.store.settled(a.rowId);
  }

  /** Persist changed counters and rate windows; drop the write-ahead rows of settled requests. */
  flush(): Promise<void> {
    const run = this.flushing.then(() => this.doFlush());
    this.flushing = run.catch(() => undefined);
    return run;
  }

  private doFlush(): Promise<void> {
    return this.strategy.flush();
  }

  /** Forget a deleted key's rate state (usage rows stay for audit). */
  forget(id: string) {
    this.rates.forget(id);
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.store.wal?.commit();
    await this.flush();
  }
}
