// A refusal by the limits, as data: which limit tripped (`limit`, e.g. "per_minute=5",
// "budget daily=1.00", "max_requests=3") travels with the error, so alerts read it instead of
// parsing the message.
import { GatewayError } from "../errors";

export type LimitCode = "rate_limit_exceeded" | "budget_exceeded" | "quota_exceeded";

export class LimitRefusal extends GatewayError {
  constructor(status: 402 | 429, code: LimitCode, readonly limit: string, message: string, headers: Record<string, string>) {
    super(status, code, message, null, headers);
  }
}
