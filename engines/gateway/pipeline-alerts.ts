// The alerts the pipeline raises around a request: usage pattern and near-limit after admission,
// key.limit_exceeded on a refusal by the key's own limits, budget thresholds after spend.
import type { KeyRef } from "./key-types";
import type { KeyEntry } from "./keys";
import { LimitRefusal, type Limits } from "./limits";
import type { RateState } from "../errors";

/** The parts of engines/gateway/alerts/alerts.ts the pipeline calls. */
export interface AlertsSink {
  limitExceeded(key: KeyRef, limit: string, detail: Record<string, unknown>): void;
  spendChanged(
    key: KeyRef,
    spend: { dailyMicros: bigint; monthlyMicros: bigint; totalMicros: bigint },
    budgets: { daily?: number; monthly?: number; total?: number; currency?: string },
    thresholds: number[],
  ): void;
  failedAuth(tokenPrefix: string, ip: string, key?: KeyRef): void;
  requestSeen(key: KeyRef, ip: string): void;
  rateUsage(key: KeyRef, limit: number, remaining: number): void;
}

export class PipelineAlerts {
  constructor(
    private readonly a: AlertsSink | undefined,
    private readonly limits: Limits,
  ) {}

  /** Usage-pattern and near-limit alerts after a request was admitted. */
  admitted(key: KeyEntry, rate: RateState | undefined, ip: string): void {
    const a = this.a;
    if (!a) return;
    a.requestSeen(key.ref, ip);
    if (rate) a.rateUsage(key.ref, rate.limit, rate.remaining);
  }

  /** key.limit_exceeded for a refusal by this key's limits (an upstream's 429 is not one). */
  refused(key: KeyEntry, e: unknown): void {
    if (!this.a || !(e instanceof LimitRefusal)) return;
    this.a.limitExceeded(key.ref, e.tripped, { code: e.code, message: e.message });
  }

  /** Budget-threshold alerts for the key and for the team and organization keys above it
   * (their budgets count the rolled-up spend; spendOf gives each key the usage its budgets see). */
  spent(key: KeyEntry): void {
    const a = this.a;
    if (!a) return;
    this.budget(a, key);
    for (const above of this.limits.budgetKeysAbove(key)) this.budget(a, above);
  }

  private budget(a: AlertsSink, key: KeyEntry): void {
    const lim = this.limits.limitsOf(key);
    if (!lim.budgeted) return;
    const s = this.limits.spendOf(key);
    a.spendChanged(
      key.ref,
      { dailyMicros: BigInt(s.day), monthlyMicros: BigInt(s.month), totalMicros: BigInt(s.total) },
      { daily: units(lim.budgetDaily), monthly: units(lim.budgetMonthly), total: units(lim.budgetTotal), currency: key.spec.budget_limits?.currency ?? "USD" },
      key.spec.budget_alerts?.thresholds ?? [],
    );
  }
}

/** micro-units of the budget currency -> units */
function units(micros: number | undefined): number | undefined {
  return micros !== undefined ? micros / 1e6 : undefined;
}
