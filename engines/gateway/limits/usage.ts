// Usage roll-up (docs/architecture.md "The gate"): a key's effective limits, and per-entity counters of
// spend (micro-USD), tokens and requests for the current UTC day, month and all time. An
// entity is a key, its team ("team:<org>/<team>") or its organization ("org:<org>").
// Shorthands: permissions.rate_limit_per_minute -> per_minute, permissions.daily_budget ->
// budget daily, permissions.monthly_budget -> budget monthly (explicit limit objects win).
import type { KeyEntry } from "../keys";

export const usd = (micros: number) => (micros / 1e6).toFixed(micros % 10_000 === 0 ? 2 : 6);

/** Effective limits of one key, derived once per key version. */
export interface EffectiveLimits {
  perMinute?: number;
  burst?: number;
  perHour?: number;
  perDay?: number;
  budgetDaily?: number; // micro-units of `currency`
  budgetMonthly?: number;
  budgetTotal?: number;
  tokensDaily?: number;
  tokensMonthly?: number;
  tokensPerRequest?: number;
  maxRequests?: number;
  /** ISO 4217 code of the budgets and of the key's counted spend (default USD) */
  currency: string;
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
    currency: b?.currency ?? "USD",
    budgeted: false,
    hasUsageLimits: false,
  };
  e.budgeted = e.budgetDaily !== undefined || e.budgetMonthly !== undefined || e.budgetTotal !== undefined;
  e.hasUsageLimits = e.budgeted || e.tokensDaily !== undefined || e.tokensMonthly !== undefined;
  return e;
}

export class PeriodCounter {
  spend = 0;
  tokens = 0;
  /** admitted requests (in flight included; a request that fails before output is given back) */
  requests = 0;
  /** requests admitted through the write-ahead log and not settled yet: persist.ts writes
   * `requests - inflight`, their write-ahead reservations stand for them until they settle */
  inflight = 0;
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

