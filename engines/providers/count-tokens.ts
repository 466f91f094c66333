// Prompt token counting (Anthropic's /v1/messages/count_tokens) for whichever provider serves a
// model: a local GGUF counts with its own tokenizer and chat template (exactly the prompt tokens
// its answer reports); an Anthropic upstream is asked (its count_tokens endpoint); any other
// upstream gets the gateway's estimate (engines/providers/estimate.ts), since OpenAI-compatible
// APIs have no counting endpoint.
import type { ChatRequest } from "../chat/types";
import type { Cancellation } from "../chat/cancel";
import { SvcError } from "../errors";
import { estimateTokens } from "./estimate";
import { postForJson } from "./http";
import type { ProviderRouter } from "./router";
import type { RouteTarget } from "./types";

export type TokenCountSource = "tokenizer" | "upstream" | "estimate";

export interface TokenCounterPool {
  countChatTokens(req: ChatRequest): Promise<number>;
}

const countPath = (base: string) => (/\/v1\/?$/.test(base) ? "/messages/count_tokens" : "/v1/messages/count_tokens");

function anthropicHeaders(t: RouteTarget): Record<string, string> {
  const h: Record<string, string> = { "anthropic-version": "2023-06-01", ...(t.headers ?? {}) };
  if (t.credential) h["x-api-key"] = t.credential;
  return h;
}

/**
 * Count the prompt tokens of `req` on the first of `targets` (the providers serving its model that
 * the gate allowed the caller). `anthropicBody` is the client's count_tokens body, forwarded (with
 * the upstream model name) to an Anthropic upstream as it came, so fields svc does not model still
 * count.
 */
export async function countPromptTokens(
  targets: readonly RouteTarget[],
  router: ProviderRouter,
  pool: TokenCounterPool | undefined,
  req: ChatRequest,
  anthropicBody: Record<string, unknown>,
  cancel?: Cancellation,
): Promise<{ inputTokens: number; source: TokenCountSource }> {
  const target = targets[0];
  if (!target) throw new SvcError("not_found", "model_not_found", `model ${req.model} is not served by this gateway`, "model");
  if (target.type === "local") {
    if (!pool) throw new SvcError("unavailable", "model_unavailable", "local inference is not available in this server");
    const local = target.upstreamModel === req.model ? req : { ...req, model: target.upstreamModel };
    return { inputTokens: await pool.countChatTokens(local), source: "tokenizer" };
  }
  if (target.type === "anthropic") {
    const t = router.resolve(target);
    const body = { ...anthropicBody, model: t.upstreamModel };
    const j = await postForJson(t.provider, t.baseUrl!, countPath(t.baseUrl!), anthropicHeaders(t), body, t.timeoutMs, cancel);
    if (typeof j?.input_tokens !== "number") throw new SvcError("upstream", "upstream_error", `provider ${t.provider} sent no input_tokens`);
    return { inputTokens: j.input_tokens, source: "upstream" };
  }
  return { inputTokens: estimateTokens(req), source: "estimate" };
}
