// The one error type engines raise. It says what went wrong (kind), which case it is (code), for
// whom (message, param) and, for limits, typed numbers (limit, remaining, reset, retry-after).
// It carries no HTTP: api/errors.ts maps kinds to status codes, limit data to x-ratelimit-* and
// Retry-After headers, and renders each protocol's body (OpenAI, Anthropic, Ollama).

/** What went wrong, in terms of the caller's next step (api/errors.ts gives each its status). */
export type ErrorKind =
  | "invalid" // the request is malformed: fix it
  | "unauthenticated" // no usable credential
  | "payment" // a budget or quota is spent
  | "forbidden" // the credential may not do this
  | "not_found"
  | "method_not_allowed"
  | "conflict" // the state does not allow it now (already exists, already done)
  | "gone"
  | "too_large"
  | "rate_limited" // retry later (see retryAfterSeconds)
  | "internal" // svc's own fault
  | "upstream" // a provider failed
  | "unavailable" // a part of svc or a provider cannot serve now
  | "timeout"
  | "upgrade_required"; // the call needs the secure channel

export type ErrorCode =
  | "invalid_api_key"
  | "key_expired"
  | "key_revoked"
  | "permission_denied"
  | "policy_denied"
  | "ip_not_allowed"
  | "budget_exceeded"
  | "quota_exceeded"
  | "rate_limit_exceeded"
  | "capacity_exceeded"
  | "invalid_request"
  | "not_found"
  | "model_not_found"
  | "model_unavailable"
  | "upstream_error"
  | "upstream_timeout"
  | "context_length_exceeded"
  | "conflict"
  | "internal_error"
  // exposed tools (/mcp/call, /mcp): see engines/tools/types.ts ToolErrorCode
  | "tool_not_found"
  | "tool_gone"
  | "invalid_arguments"
  | "tool_not_exposable"
  | "execution_denied"
  | "tool_timeout"
  | "service_unavailable"
  | "tool_output_invalid"
  // pairing, secure channel, media, credits
  | "wrong_audience"
  | "secure_channel_required"
  | "not_configured"
  | "replay_refused"
  | "session_expired"
  | "decryption_failed"
  // quoted video jobs (engines/media/quotes.ts): refused before anything goes upstream
  | "quote_required"
  | "consent_required"
  | "quote_not_found"
  | "quote_expired"
  | "quote_used"
  | "quote_mismatch";

/** The rate window a key is in (the x-ratelimit-* headers describe it). */
export interface RateState {
  limit: number;
  remaining: number;
  /** seconds until the window is full again */
  resetSeconds: number;
}

/** Typed data of a limit that refused a request (or the key's rate state on any refusal). */
export interface LimitData {
  limit?: number;
  remaining?: number;
  resetSeconds?: number;
  /** the honest wait before a retry can succeed */
  retryAfterSeconds?: number;
  /** which limit tripped, e.g. "per_minute=5", "budget daily=1", "max_requests=3" */
  window?: string;
}

export class SvcError extends Error {
  constructor(
    readonly kind: ErrorKind,
    readonly code: ErrorCode,
    message: string,
    readonly param: string | null = null,
    /** limit data; filled in by the gate with the key's rate state when it refuses */
    public limit: LimitData = {},
  ) {
    super(message);
  }
}

export const invalidRequest = (message: string, param: string | null = null) => new SvcError("invalid", "invalid_request", message, param);
export const notFound = (message: string) => new SvcError("not_found", "not_found", message);
/** The requested model is served by no Provider and no local Model (404, like OpenAI). */
export const modelNotFound = (model: string) => new SvcError("not_found", "model_not_found", `model ${JSON.stringify(model)} is not served by this gateway`, "model");
