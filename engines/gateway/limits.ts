// Limits (DESIGN.md "Gateway pipeline" / Limits), all checked synchronously in memory.
//
// Rate limits (per key, in memory only; a restart starts them afresh):
//   per_minute  token bucket holding `burst` (default per_minute), refilling per_minute/60 per s
//   per_hour, per_day  sliding windows (exact ring of admission times up to 10,000 slots,
//                      above that 120 sub-buckets, which errs on the strict side)
// Usage limits (persisted in UsageCounter, loaded at start, flushed in one transaction per
// second and at close):
//   budget_limits daily / monthly (UTC calendar) / total   -> 402 budget_exceeded
//   token_limits daily / monthly                           -> 402 quota_exceeded
//   token_limits per_request_max (prompt estimate + max_tokens) -> 402 quota_exceeded
//   temporary keys' permissions.max_requests (over the key's life) -> 402 quota_exceeded
// Reservation: a request is admitted while the committed amount (settled + reserved by requests
// in flight) is under the limit; it then reserves its estimate (prompt estimate + max output at
// the model's price) until it settles with the actual usage. Admission is synchronous, so
// concurrent requests can exceed a limit by at most one reservation.
// Roll-up: usage is recorded on the key and on its team ("team:<org>/<team>") and organization
// ("org:<org>"). A team key's budget/token limits apply to its team's usage (every member
// key), an organization key's to its organization's. Rate limits stay per key.
// Shorthands: permissions.rate_limit_per_minute -> per_minute, permissions.daily_budget ->
// budget daily, permissions.monthly_budget -> budget monthly (explicit limit objects win).
import type { PrismaClient } from "../../prisma/client";
import { GatewayError } from "./errors";
import { keyState, type KeyCache, type KeyEntry, teamKey } from "./keys";

const MINUTE = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;

export const usd = (micros: number) => (micros / 1e6).toFixed(micros % 10_000 === 0 ? 2 : 6);

/** Effective limits of one key, derived once per key version. */
export interface EffectiveLimits {
  perMinute?: number;
  burst?: number;
  perHour?: number;
  perDay?: number;
  budgetDaily?: number; // micro-USD
  budgetMonthly?: number;
  budgetTotal?: number;
  tokensDaily?: number;
  tokensMonthly?: number;
  tokensPerRequest?: number;
  maxRequests?: number;
  /** any budget: the key may only use priced models */
  budgeted: boolean;
  hasUsageLimits: boolean;
}

const micros = (x: number | undefined) => (x === undefined ? undefined : Math.round(x * 1e6));

export function effectiveLimits(k: KeyEntry): EffectiveLimits {
  const s = k.spec;
  const p = s.permissions ?? {};
  const r = s.rate_limits ?? {};
  const b = s.budget_limits;
  const t = s.token_limits ?? {};
  const e: EffectiveLimits = {
    perMinute: r.per_minute ?? p.rate_limit_per_minute,
    burst: r.burst,
    perHour: r.per_hour,
    perDay: r.per_day,
    budgetDaily: micros(b?.daily ?? p.daily_budget),
    budgetMonthly: micros(b?.monthly ?? p.monthly_budget),
    budgetTotal: micros(b?.total),
    tokensDaily: t.daily,
    tokensMonthly: t.monthly,
    tokensPerRequest: t.per_request_max,
    maxRequests: p.max_requests,
    budgeted: false,
    hasUsageLimits: false,
  };
  e.budgeted = e.budgetDaily !== undefined || e.budgetMonthly !== undefined || e.budgetTotal !== undefined;
  e.hasUsageLimits = e.budgeted || e.tokensDaily !== undefined || e.tokensMonthly !== undefined;
  return e;
}

class PeriodCounter {
  spend = 0;
  tokens = 0;
  requests = 0;
  constructor(readonly entity: string, readonly period: string) {}
}

export class EntityUsage {
  reservedSpend = 0;
  reservedTokens = 0;
  day: PeriodCounter;
  month: PeriodCounter;
  total: PeriodCounter;
  constructor(readonly id: string, dayP: string, monthP: string) {
    this.day = new PeriodCounter(id, dayP);
    this.month = new PeriodCounter(id, monthP);
    this.total = new PeriodCounter(id, "total");
  }
}

class TokenBucket {
  tokens: number;
  last: number;
  constructor(public cap: number, public perMs: number, now: number) {
    this.tokens = cap;
    this.last = now;
  }
  refill(now: number) {
    if (now > this.last) {
      this.tokens = Math.min(this.cap, this.tokens + (now - this.last) * this.perMs);
      this.last = now;
    }
  }
  /** reshape in place: what was used stays used */
  reshape(cap: number, perMs: number, now: number) {
    this.refill(now);
    const used = this.cap - this.tokens;
    this.cap = cap;
    this.perMs = perMs;
    this.tokens = Math.max(0, Math.min(cap, cap - used));
  }
  /** ms until one token is available (0 when one is) */
  waitMs(): number {
    return this.tokens >= 1 ? 0 : (1 - this.tokens) / this.perMs;
  }
}

const EXACT_MAX = 10_000;
const SLICES = 120;

/** A sliding window of admissions: exact (ring of timestamps) or sliced for large limits. */
class SlidingWindow {
  private ring: Float64Array | null = null;
  private head = 0; // next write (= oldest when full)
  private count = 0;
  private slices: Float64Array | null = null; // counts per slice
  private sliceStart: Float64Array | null = null; // start time of each slice's content
  constructor(public limit: number, readonly windowMs: number) {
    this.alloc(limit);
  }
  private alloc(limit: number) {
    if (limit <= EXACT_MAX) {
      this.ring = new Float64Array(limit);
      this.slices = this.sliceStart = null;
    } else {
      this.slices = new Float64Array(SLICES);
      this.sliceStart = new Float64Array(SLICES).fill(-Infinity);
      this.ring = null;
    }
    this.head = 0;
    this.count = 0;
  }
  resize(limit: number) {
    if (limit === this.limit) return;
    const keep: number[] = [];
    if (this.ring) {
      for (let i = 0; i < this.count; i++) keep.push(this.ring[(this.head - this.count + i + this.ring.length * 2) % this.ring.length]);
    }
    const slices = this.slices;
    const starts = this.sliceStart;
    this.limit = limit;
    this.alloc(limit);
    if (keep.length) for (const t of keep.slice(-limit)) this.add(t);
    else if (slices && starts) for (let i = 0; i < SLICES; i++) for (let j = 0; j < Math.min(slices[i], limit); j++) this.add(starts[i]);
  }
  private sliceUsed(now: number): number {
    let n = 0;
    for (let i = 0; i < SLICES; i++) if (this.sliceStart![i] > now - this.windowMs) n += this.slices![i];
    return n;
  }
  used(now: number): number {
    if (this.ring) {
      // admissions still in the window
      let n = 0;
      for (let i = 0; i < this.count; i++) {
        const t = this.ring[(this.head - 1 - i + this.ring.length) % this.ring.length];
        if (t > now - this.windowMs) n++;
        else break;
      }
      return n;
    }
    return this.sliceUsed(now);
  }
  /** ms until a slot frees (0 when one is free) */
  waitMs(now: number): number {
    if (this.ring) {
      if (this.count < this.limit) return 0;
      const oldest = this.ring[this.head];
      return Math.max(0, oldest + this.windowMs - now);
    }
    if (this.sliceUsed(now) < this.limit) return 0;
    let oldest = Infinity;
    for (let i = 0; i < SLICES; i++) if (this.slices![i] > 0 && this.sliceStart![i] > now - this.windowMs) oldest = Math.min(oldest, this.sliceStart![i]);
    return Math.max(1, oldest + this.windowMs - now);
  }
  add(now: number) {
    if (this.ring) {
      this.ring[this.head] = now;
      this.head = (this.head + 1) % this.ring.length;
      if (this.count < this.limit) this.count++;
      return;
    }
    const width = this.windowMs / SLICES;
    const idx = Math.floor(now / width) % SLICES;
    const start = Math.floor(now / width) * width;
    if (this.sliceStart![idx] !== start) {
      this.sliceStart![idx] = start;
      this.slices![idx] = 0;
    }
    this.slices![idx]++;
  }
  /** The admissions still in the window as [time, count] pairs, oldest first, at most SLICES of
   * them: each admission is rounded up to the end of its slice (never past `now`), so a window
   * restored from it is never more lenient than the one saved. */
  snapshot(now: number): Array<[number, number]> {
    const width = this.windowMs / SLICES;
    const out: Array<[number, number]> = [];
    if (this.ring) {
      const ring = this.ring;
      for (let i = this.count - 1; i >= 0; i--) {
        const t = ring[(this.head - 1 - i + ring.length * 2) % ring.length];
        if (t <= now - this.windowMs) continue;
        const at = Math.min((Math.floor(t / width) + 1) * width - 1, now);
        const last = out[out.length - 1];
        if (last && last[0] === at) last[1]++;
        else out.push([at, 1]);
      }
      return out;
    }
    const order = [...Array(SLICES).keys()].sort((a, b) => this.sliceStart![a] - this.sliceStart![b]);
    for (const i of order) {
      if (this.sliceStart![i] > now - this.windowMs && this.slices![i] > 0) out.push([Math.min(this.sliceStart![i] + width - 1, now), this.slices![i]]);
    }
    return out;
  }

  restore(pairs: Array<[number, number]>, now: number): void {
    let room = this.limit;
    for (const [t, n] of pairs) {
      if (!(t > now - this.windowMs) || !(t <= now)) continue;
      for (let j = 0; j < n && room > 0; j++, room--) this.add(t);
    }
  }

  /** seconds until the window is empty again */
  resetMs(now: number): number {
    if (this.ring) {
      if (this.count === 0) return 0;
      const newest = this.ring[(this.head - 1 + this.ring.length) % this.ring.length];
      return Math.max(0, newest + this.windowMs - now);
    }
    return this.windowMs;
  }
}

interface RateState {
  bucket?: TokenBucket;
  hour?: SlidingWindow;
  day?: SlidingWindow;
}

/** A key's rate state as stored in the RateState table (JSON). */
interface RateSnapshot {
  /** token bucket: tokens left, at time `last` */
  bucket?: { tokens: number; last: number };
  hour?: Array<[number, number]>;
  day?: Array<[number, number]>;
}

function snapshotOf(st: RateState, now: number): RateSnapshot {
  const out: RateSnapshot = {};
  if (st.bucket) {
    st.bucket.refill(now);
    out.bucket = { tokens: st.bucket.tokens, last: st.bucket.last };
  }
  if (st.hour) out.hour = st.hour.snapshot(now);
  if (st.day) out.day = st.day.snapshot(now);
  return out;
}

function parseSnapshot(json: string): RateSnapshot | null {
  try {
    const v = JSON.parse(json);
    return v && typeof v === "object" ? (v as RateSnapshot) : null;
  } catch {
    return null;
  }
}

const pairsOk = (x: unknown): x is Array<[number, number]> =>
  Array.isArray(x) && x.every((p) => Array.isArray(p) && Number.isFinite(p[0]) && Number.isInteger(p[1]) && p[1] > 0);

/** One admitted request's hold on counters, released by settle(). */
export interface Admission {
  entities: EntityUsage[];
  spend: number;
  tokens: number;
  /** counted toward max_requests / request counters */
  settled: boolean;
}

export interface Estimate {
  /** reserved spend in micro-USD */
  spend: number;
  /** reserved tokens (prompt estimate + max output) */
  tokens: number;
  /** prompt estimate + explicit max_tokens (for per_request_max), or undefined if no max_tokens */
  requestTokens: number;
  /** model has a price (a budgeted key needs one) */
  priced: boolean;
  model: string;
}

/** A check to make: limits of one key against the usage of one entity. */
interface Check {
  lim: EffectiveLimits;
  usage: EntityUsage;
  /** "" for the key's own limits, else `team key "name"` */
  whose: string;
}

export class Limits {
  private usage = new Map<string, EntityUsage>();
  private rate = new Map<string, RateState>();
  /** keys whose rate state changed since the last flush (or was forgotten) */
  private rateDirty = new Set<string>();
  /** rate state loaded at start, applied when the key is next seen */
  private rateSaved = new Map<string, RateSnapshot>();
  private effCache = new WeakMap<KeyEntry, EffectiveLimits>();
  private dirty = new Set<PeriodCounter>();
  private dayP = "";
  private monthP = "";
  private nextDayAt = 0;
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();
  readonly now: () => number;

  constructor(
    private prisma: PrismaClient,
    private keys: KeyCache,
    opts: { now?: () => number; flushMs?: number } = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.periods(this.now());
    if (opts.flushMs !== 0) {
      this.timer = setInterval(() => void this.flush().catch(() => undefined), opts.flushMs ?? 1000);
      this.timer.unref();
    }
  }

  /** Load the current periods' counters and the rate windows (so a restart keeps spend and
   * does not hand a key a fresh rate allowance). */
  async load(): Promise<void> {
    const now = this.now();
    this.periods(now);
    for (const r of await this.prisma.rateState.findMany()) {
      const snap = parseSnapshot(r.state);
      if (snap) this.rateSaved.set(r.keyId, snap);
    }
    const rows = await this.prisma.usageCounter.findMany({ where: { period: { in: [this.dayP, this.monthP, "total"] } } });
    for (const r of rows) {
      const u = this.entity(r.keyId);
      const c = r.period === "total" ? u.total : r.period === this.dayP ? u.day : u.month;
      c.spend = Number(r.spendMicros);
      c.tokens = Number(r.tokens);
      c.requests = Number(r.requests);
    }
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

  /** Usage entities a key's requests count toward: key, team, organization. */
  private entitiesOf(k: KeyEntry): { own: EntityUsage; team?: EntityUsage; org?: EntityUsage } {
    const s = k.spec;
    const own = this.entity(k.id);
    const team = s.team_id && (s.key_type === "team" || s.key_type === "user") ? this.entity("team:" + teamKey(s.organization_id, s.team_id)) : undefined;
    const org = s.organization_id ? this.entity("org:" + s.organization_id) : undefined;
    return { own, team, org };
  }

  private checksOf(k: KeyEntry, ents: { own: EntityUsage; team?: EntityUsage; org?: EntityUsage }, now: number): Check[] {
    const s = k.spec;
    const lim = this.limitsOf(k);
    const ownUsage = s.key_type === "team" && ents.team ? ents.team : s.key_type === "organization" && ents.org ? ents.org : ents.own;
    const checks: Check[] = [];
    if (lim.hasUsageLimits) checks.push({ lim, usage: ownUsage, whose: "" });
    if (ents.team && s.key_type === "user") {
      for (const t of this.keys.teamKeysOf(s.organization_id, s.team_id!)) {
        const tl = this.limitsOf(t);
        if (tl.hasUsageLimits && keyState(t, now) === "active") checks.push({ lim: tl, usage: ents.team, whose: `team key "${t.name}" ` });
      }
    }
    if (ents.org && s.key_type !== "organization") {
      for (const o of this.keys.orgKeysOf(s.organization_id!)) {
        const ol = this.limitsOf(o);
        if (ol.hasUsageLimits && keyState(o, now) === "active") checks.push({ lim: ol, usage: ents.org, whose: `organization key "${o.name}" ` });
      }
    }
    return checks;
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
    for (const c of this.checksOf(k, ents, now)) if (c.lim.budgeted) return true;
    return false;
  }

  private rateState(k: KeyEntry, lim: EffectiveLimits, now: number): RateState | null {
    if (lim.perMinute === undefined && lim.perHour === undefined && lim.perDay === undefined) {
      return null;
    }
    let st = this.rate.get(k.id);
    const saved = st ? undefined : this.rateSaved.get(k.id);
    if (!st) {
      st = {};
      this.rate.set(k.id, st);
    }
    if (lim.perMinute !== undefined) {
      const cap = lim.burst ?? lim.perMinute;
      const perMs = lim.perMinute / MINUTE;
      if (!st.bucket) st.bucket = new TokenBucket(cap, perMs, now);
      else if (st.bucket.cap !== cap || st.bucket.perMs !== perMs) st.bucket.reshape(cap, perMs, now);
      st.bucket.refill(now);
    } else st.bucket = undefined;
    if (lim.perHour !== undefined) {
      if (!st.hour) st.hour = new SlidingWindow(lim.perHour, HOUR);
      else st.hour.resize(lim.perHour);
    } else st.hour = undefined;
    if (lim.perDay !== undefined) {
      if (!st.day) st.day = new SlidingWindow(lim.perDay, DAY);
      else st.day.resize(lim.perDay);
    } else st.day = undefined;
    if (saved) this.restoreRate(k.id, st, saved, now);
    return st;
  }

  /** Apply a saved snapshot to freshly made rate state (limits may have changed meanwhile:
   * the bucket keeps what was used, windows keep at most their limit). */
  private restoreRate(id: string, st: RateState, saved: RateSnapshot, now: number) {
    this.rateSaved.delete(id);
    const b = saved.bucket;
    if (st.bucket && b && Number.isFinite(b.tokens) && Number.isFinite(b.last) && b.last <= now) {
      st.bucket.tokens = Math.max(0, Math.min(st.bucket.cap, b.tokens));
      st.bucket.last = b.last;
      st.bucket.refill(now);
    }
    if (st.hour && pairsOk(saved.hour)) st.hour.restore(saved.hour, now);
    if (st.day && pairsOk(saved.day)) st.day.restore(saved.day, now);
  }

  /** x-ratelimit-* headers for a key (the per_minute bucket, else the hour, else the day window). */
  rateHeaders(k: KeyEntry, now = this.now()): Record<string, string> {
    const lim = this.limitsOf(k);
    const st = this.rateState(k, lim, now);
    if (!st) return {};
    if (st.bucket) {
      const b = st.bucket;
      return {
        "x-ratelimit-limit-requests": String(lim.perMinute),
        "x-ratelimit-remaining-requests": String(Math.floor(b.tokens)),
        "x-ratelimit-reset-requests": `${Math.ceil((b.cap - b.tokens) / b.perMs / 1000)}s`,
      };
    }
    const w = (st.hour ?? st.day)!;
    return {
      "x-ratelimit-limit-requests": String(w.limit),
      "x-ratelimit-remaining-requests": String(Math.max(0, w.limit - w.used(now))),
      "x-ratelimit-reset-requests": `${Math.ceil(w.resetMs(now) / 1000)}s`,
    };
  }

  /**
   * Check every limit of the key and, when all pass, take a rate slot and reserve the estimate.
   * Throws GatewayError (429 / 402 / 403) naming the limit that tripped.
   */
  admit(k: KeyEntry, est: Estimate, now = this.now()): Admission {
    this.periods(now);
    const lim = this.limitsOf(k);

    // rate limits: check all before consuming any
    const st = this.rateState(k, lim, now);
    if (st) {
      let wait = 0;
      let which = "";
      if (st.bucket) {
        const w = st.bucket.waitMs();
        if (w > 0) {
          wait = w;
          which = lim.burst !== undefined && lim.burst !== lim.perMinute ? `per_minute=${lim.perMinute} (burst=${lim.burst})` : `per_minute=${lim.perMinute}`;
        }
      }
      if (st.hour && !which) {
        const w = st.hour.waitMs(now);
        if (w > 0) [wait, which] = [w, `per_hour=${lim.perHour}`];
      }
      if (st.day && !which) {
        const w = st.day.waitMs(now);
        if (w > 0) [wait, which] = [w, `per_day=${lim.perDay}`];
      }
      if (which) {
        const retry = Math.max(1, Math.ceil(wait / 1000));
        throw new GatewayError(429, "rate_limit_exceeded", `rate limit ${which} exceeded; retry after ${retry}s`, null, {
          ...this.rateHeaders(k, now),
          "retry-after": String(retry),
        });
      }
    }

    const ents = this.entitiesOf(k);
    const checks = this.checksOf(k, ents, now);

    if (lim.maxRequests !== undefined && ents.own.total.requests >= lim.maxRequests) {
      throw this.err(k, now, "quota_exceeded", `request quota max_requests=${lim.maxRequests} of this key is used up`);
    }
    if (lim.tokensPerRequest !== undefined && est.requestTokens > lim.tokensPerRequest) {
      throw this.err(k, now, "quota_exceeded", `token limit per_request_max=${lim.tokensPerRequest} exceeded (prompt estimate plus max_tokens is ${est.requestTokens})`);
    }
    for (const c of checks) {
      const u = c.usage;
      const l = c.lim;
      if (l.tokensDaily !== undefined && u.day.tokens + u.reservedTokens >= l.tokensDaily) {
        throw this.err(k, now, "quota_exceeded", `${c.whose}token limit daily=${l.tokensDaily} exceeded (used ${u.day.tokens + u.reservedTokens} today)`);
      }
      if (l.tokensMonthly !== undefined && u.month.tokens + u.reservedTokens >= l.tokensMonthly) {
        throw this.err(k, now, "quota_exceeded", `${c.whose}token limit monthly=${l.tokensMonthly} exceeded (used ${u.month.tokens + u.reservedTokens} this month)`);
      }
      if (l.budgetDaily !== undefined && u.day.spend + u.reservedSpend >= l.budgetDaily) {
        throw this.err(k, now, "budget_exceeded", `${c.whose}budget daily=${usd(l.budgetDaily)} USD exceeded (spent ${usd(u.day.spend)} USD today)`);
      }
      if (l.budgetMonthly !== undefined && u.month.spend + u.reservedSpend >= l.budgetMonthly) {
        throw this.err(k, now, "budget_exceeded", `${c.whose}budget monthly=${usd(l.budgetMonthly)} USD exceeded (spent ${usd(u.month.spend)} USD this month)`);
      }
      if (l.budgetTotal !== undefined && u.total.spend + u.reservedSpend >= l.budgetTotal) {
        throw this.err(k, now, "budget_exceeded", `${c.whose}budget total=${usd(l.budgetTotal)} USD exceeded (spent ${usd(u.total.spend)} USD)`);
      }
    }

    // admitted: consume and reserve
    if (st) {
      if (st.bucket) st.bucket.tokens -= 1;
      st.hour?.add(now);
      st.day?.add(now);
      this.rateDirty.add(k.id);
    }
    const entities = [ents.own];
    if (ents.team) entities.push(ents.team);
    if (ents.org) entities.push(ents.org);
    for (const u of entities) {
      u.reservedSpend += est.spend;
      u.reservedTokens += est.tokens;
      u.day.requests++;
      u.month.requests++;
      u.total.requests++;
      this.dirty.add(u.day).add(u.month).add(u.total);
    }
    return { entities, spend: est.spend, tokens: est.tokens, settled: false };
  }

  private err(k: KeyEntry, now: number, code: "quota_exceeded" | "budget_exceeded", msg: string) {
    return new GatewayError(402, code, msg, null, this.rateHeaders(k, now));
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
      if (!served) {
        u.day.requests--;
        u.month.requests--;
        u.total.requests--;
      }
      this.dirty.add(u.day).add(u.month).add(u.total);
    }
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

  /** Persist changed counters: one transaction, multi-row upserts of absolute values. */
  flush(): Promise<void> {
    const run = this.flushing.then(() => this.doFlush());
    this.flushing = run.catch(() => undefined);
    return run;
  }

  private async doFlush() {
    if (this.dirty.size === 0 && this.rateDirty.size === 0) return;
    const rows = [...this.dirty];
    this.dirty.clear();
    const rateIds = [...this.rateDirty];
    this.rateDirty.clear();
    const nowMs = this.now();
    const now = new Date().toISOString();
    const rates: unknown[] = [];
    const gone: string[] = [];
    for (const id of rateIds) {
      const st = this.rate.get(id);
      if (st) rates.push(id, JSON.stringify(snapshotOf(st, nowMs)), now);
      else gone.push(id);
    }
    try {
      await this.prisma.$transaction(async (p) => {
        for (let i = 0; i < rates.length; i += 3 * 300) {
          const chunk = rates.slice(i, i + 3 * 300);
          await p.$executeRawUnsafe(
            `INSERT INTO "RateState" (keyId, state, updatedAt) VALUES ${Array(chunk.length / 3).fill("(?,?,?)").join(",")}
             ON CONFLICT(keyId) DO UPDATE SET state=excluded.state, updatedAt=excluded.updatedAt`,
            ...chunk,
          );
        }
        for (let i = 0; i < gone.length; i += 500) {
          const chunk = gone.slice(i, i + 500);
          await p.$executeRawUnsafe(`DELETE FROM "RateState" WHERE keyId IN (${chunk.map(() => "?").join(",")})`, ...chunk);
        }
        for (let i = 0; i < rows.length; i += 400) {
          const chunk = rows.slice(i, i + 400);
          await p.$executeRawUnsafe(
            `INSERT INTO "UsageCounter" (keyId, period, spendMicros, tokens, requests, updatedAt) VALUES ${chunk.map(() => "(?,?,?,?,?,?)").join(",")}
             ON CONFLICT(keyId, period) DO UPDATE SET spendMicros=excluded.spendMicros, tokens=excluded.tokens, requests=excluded.requests, updatedAt=excluded.updatedAt`,
            ...chunk.flatMap((c) => [c.entity, c.period, Math.max(0, Math.round(c.spend)), c.tokens, Math.max(0, c.requests), now]),
          );
        }
      });
    } catch (e) {
      for (const r of rows) this.dirty.add(r); // retry at the next flush
      for (const id of rateIds) this.rateDirty.add(id);
      throw e;
    }
  }

  /** Forget a deleted key's rate state (usage rows stay for audit). */
  forget(id: string) {
    this.rate.delete(id);
    this.rateSaved.delete(id);
    this.rateDirty.add(id); // the next flush deletes its saved state
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
  }
}
