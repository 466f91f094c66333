// How engine errors look over HTTP. Engines raise one error type (engines/errors.ts SvcError:
// kind, code, message, param, typed limit data); this file alone maps kinds to status codes,
// limit data to x-ratelimit-* and Retry-After headers, and codes to OpenAI's error types. The
// error middleware renders every failure as JSON {error:{message,type,code,param}} (Anthropic and
// Ollama routes use their own renderers over the same mapping). Unknown errors become a 500 with a
// generic message; details go to the log only.
import { traceField } from "../engines/telemetry";
import type { Context, Next } from "koa";
import type { HttpContext } from "./http-context";
import { SvcError, type ErrorCode, type ErrorKind, type RateState } from "../engines/errors";
import type { Logger } from "../engines/svc";

export type ErrorRenderer = (ctx: HttpContext, err: SvcError) => void;

const STATUS: Record<ErrorKind, number> = {
  invalid: 400,
  unauthenticated: 401,
  payment: 402,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  gone: 410,
  too_large: 413,
  upgrade_required: 426,
  rate_limited: 429,
  internal: 500,
  upstream: 502,
  unavailable: 503,
  timeout: 504,
};

/** The kind a status stands for (an HttpError Koa or a body parser threw). */
const KIND_OF_STATUS = new Map<number, ErrorKind>([...Object.entries(STATUS).map(([k, s]) => [s, k as ErrorKind] as const), [408, "timeout"], [422, "invalid"]]);
const kindOfStatus = (status: number): ErrorKind => KIND_OF_STATUS.get(status) ?? (status >= 500 ? "internal" : "invalid");

/** The HTTP status of an error kind, and of an engine error. */
export const statusOfKind = (k: ErrorKind): number => STATUS[k] ?? 500;
export const statusOf = (e: SvcError): number => statusOfKind(e.kind);

const TYPE: Record<ErrorCode, string> = {
  invalid_api_key: "authentication_error",
  key_expired: "authentication_error",
  key_revoked: "authentication_error",
  permission_denied: "permission_error",
  policy_denied: "permission_error",
  ip_not_allowed: "permission_error",
  budget_exceeded: "insufficient_quota",
  quota_exceeded: "insufficient_quota",
  rate_limit_exceeded: "rate_limit_error",
  capacity_exceeded: "rate_limit_error",
  invalid_request: "invalid_request_error",
  not_found: "not_found_error",
  model_not_found: "invalid_request_error",
  model_unavailable: "service_unavailable",
  upstream_error: "api_error",
  upstream_timeout: "timeout_error",
  context_length_exceeded: "invalid_request_error",
  conflict: "conflict_error",
  internal_error: "api_error",
  tool_not_found: "not_found_error",
  tool_gone: "not_found_error",
  invalid_arguments: "invalid_request_error",
  tool_not_exposable: "permission_error",
  execution_denied: "permission_error",
  tool_timeout: "timeout_error",
  service_unavailable: "service_unavailable",
  tool_output_invalid: "api_error",
  wrong_audience: "authentication_error",
  secure_channel_required: "permission_error",
  not_configured: "not_found_error",
  replay_refused: "conflict_error",
  session_expired: "authentication_error",
  decryption_failed: "invalid_request_error",
  quote_required: "invalid_request_error",
  consent_required: "invalid_request_error",
  quote_not_found: "invalid_request_error",
  quote_expired: "invalid_request_error",
  quote_used: "invalid_request_error",
  quote_mismatch: "invalid_request_error",
};

/** OpenAI's error body. */
export function openAIBody(e: SvcError) {
  return { error: { message: e.message, type: TYPE[e.code] ?? "api_error", code: e.code, param: e.param } };
}

/** x-ratelimit-* headers of a key's rate window. */
export function rateHeaders(r: RateState | undefined): Record<string, string> {
  if (!r) return {};
  return {
    "x-ratelimit-limit-requests": String(r.limit),
    "x-ratelimit-remaining-requests": String(r.remaining),
    "x-ratelimit-reset-requests": `${r.resetSeconds}s`,
  };
}

/** The headers of an error: the key's rate window and an honest Retry-After. */
export function errorHeaders(e: SvcError): Record<string, string> {
  const l = e.limit;
  const h = l.limit !== undefined ? rateHeaders({ limit: l.limit, remaining: l.remaining ?? 0, resetSeconds: l.resetSeconds ?? 0 }) : {};
  if (l.retryAfterSeconds !== undefined) h["retry-after"] = String(l.retryAfterSeconds);
  return h;
}

/** Status and headers of an error response (every protocol's renderer starts here). */
export function setErrorHead(ctx: HttpContext, err: SvcError): void {
  ctx.status = statusOf(err);
  const h = errorHeaders(err);
  for (const k in h) ctx.set(k, h[k]);
}

export const renderOpenAI: ErrorRenderer = (ctx, err) => {
  setErrorHead(ctx, err);
  ctx.body = openAIBody(err);
};

/** Normalize anything thrown into a SvcError (koa/http-errors carry status/expose). */
export function toSvcError(e: any): SvcError {
  if (e instanceof SvcError) return e;
  if (e && typeof e.status === "number" && e.expose) {
    const code = e.status === 404 ? "not_found" : "invalid_request";
    return new SvcError(kindOfStatus(e.status), code, e.message);
  }
  return new SvcError("internal", "internal_error", "internal server error");
}

/** Turn a failure into the protocol's error response (or drop the connection when a response
 * was already under way). Unexpected errors are logged with their stack; clients get a 500. */
export function renderFailure(ctx: HttpContext, e: any, log: Logger, render: ErrorRenderer = renderOpenAI): void {
  const err = toSvcError(e);
  if (statusOf(err) >= 500 && !(e instanceof SvcError)) {
    log.error("request failed", { method: ctx.method, path: ctx.path, err: String(e?.stack ?? e), ...traceField(ctx.state.span) });
  }
  if (ctx.headerSent || !ctx.writable) {
    ctx.res.destroy();
    return;
  }
  ((ctx.state as any).renderError as ErrorRenderer | undefined ?? render)(ctx, err);
}

export function errorMiddleware(log: Logger, render: ErrorRenderer = renderOpenAI) {
  return async (ctx: Context, next: Next) => {
    try {
      await next();
    } catch (e: any) {
      renderFailure(ctx, e, log, render);
    }
  };
}
