// A refusal by the limits, as data: which limit tripped (`tripped`, e.g. "per_minute=5",
// "daily=1", "max_requests=3") travels with the error, so alerts and metrics read it instead of
// parsing the message; the key's rate state and the wait before a retry are typed numbers
// (SvcError.limit), rendered as headers by api/errors.ts.
import { SvcError, type LimitData, type RateState } from "../../errors";

export type LimitCode = "rate_limit_exceeded" | "budget_exceeded" | "quota_exceeded";

export class LimitRefusal extends SvcError {
  constructor(code: LimitCode, readonly tripped: string, message: string, rate?: RateState, retryAfterSeconds?: number) {
    super(code === "rate_limit_exceeded" ? "rate_limited" : "payment", code, message, null, limitData(tripped, rate, retryAfterSeconds));
  }
}

export function limitData(window: string | undefined, rate?: RateState, retryAfterSeconds?: number): LimitData {
  const d: LimitData = rate ? { limit: rate.limit, remaining: rate.remaining, resetSeconds: rate.resetSeconds } : {};
  if (retryAfterSeconds !== undefined) d.retryAfterSeconds = retryAfterSeconds;
  if (window !== undefined) d.window = window;
  return d;
}
