// The gateway's one error type. Protocol adapters render it in their own shape
// (OpenAI {error:{message,type,code,param}}, Anthropic {type:"error",error}, Ollama {error}).

export type GatewayErrorCode =
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
  | "tool_not_exposable"
  | "execution_denied"
  | "tool_timeout"
  | "service_unavailable"
  // pairing, secure channel, media, credits (api/routes/pair.ts, secure.ts, media.ts)
  | "wrong_audience"
  | "secure_channel_required"
  | "not_configured"
  | "replay_refused"
  | "session_expired"
  | "decryption_failed"
  // quoted video jobs (engines/media/quotes.ts): all 400, refused before anything goes upstream
  | "quote_required"
  | "consent_required"
  | "quote_not_found"
  | "quote_expired"
  | "quote_used"
  | "quote_mismatch";

const typeOf: Record<GatewayErrorCode, string> = {
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
  tool_not_exposable: "permission_error",
  execution_denied: "permission_error",
  tool_timeout: "timeout_error",
  service_unavailable: "service_unavailable",
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

export class GatewayError extends Error {
  readonly type: string;
  constructor(
    readonly status: number,
    readonly code: GatewayErrorCode,
    message: string,
    readonly param: string | null = null,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.type = typeOf[code];
  }

  toOpenAI() {
    return { error: { message: this.message, type: this.type, code: this.code, param: this.param } };
  }
}

export const invalidRequest = (message: string, param: string | null = null) => new GatewayError(400, "invalid_request", message, param);
export const notFound = (message: string) => new GatewayError(404, "not_found", message);
/** The requested model is served by no Provider and no local Model (404, like OpenAI). */
export const modelNotFound = (model: string) => new GatewayError(404, "model_not_found", `model ${JSON.stringify(model)} is not served by this gateway`, "model");
