// Errors in the Anthropic shape {type: "error", error: {type, message}}, typed by HTTP status as
// Anthropic's API does.
import type { HttpContext } from "../http-context";
import type { SvcError } from "../../engines/errors";
import { setErrorHead, statusOf } from "../errors";

export function anthropicErrorType(status: number): string {
  switch (status) {
    case 400:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 402:
      return "billing_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
    case 529:
      return "overloaded_error";
    case 504:
      return "timeout_error";
    default:
      return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

export const anthropicErrorBody = (err: SvcError) => ({ type: "error" as const, error: { type: anthropicErrorType(statusOf(err)), message: err.message } });

export function renderAnthropic(ctx: HttpContext, err: SvcError): void {
  setErrorHead(ctx, err);
  ctx.body = anthropicErrorBody(err);
}
