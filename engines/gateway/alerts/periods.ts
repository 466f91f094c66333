// Budget periods as the limits use them: UTC calendar day, UTC calendar month, lifetime.
export type BudgetPeriod = "daily" | "monthly" | "total";

export const BUDGET_PERIODS: BudgetPeriod[] = ["daily", "monthly", "total"];

/** Identifier of the period containing `now` ("2026-11-22", "2026-11", "total"). */
export function periodId(period: BudgetPeriod, now: Date): string {
  const iso = now.toISOString();
  return period === "daily" ? iso.slice(0, 10) : period === "monthly" ? iso.slice(0, 7) : "total";
}

/** AlertMark.mark for one threshold of one period: unique per key, so it fires once. */
export function budgetMark(period: BudgetPeriod, id: string, threshold: number): string {
  return `budget:${period}:${id}:${threshold}`;
}
