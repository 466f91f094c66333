// Legacy text completions (/v1/completions): request, response and stream transforms. The prompt
// is raw text (no chat template) -> ChatRequest.prompt.
import type { ChatResult } from "../../engines/chat/collect";
import type { ChatEvent, ChatRequest } from "../../engines/chat/types";
import { checkUnsupported, parseCommon, parseSampling } from "./chat-request";
import { openaiUsage } from "./chat-response";
import { bad } from "./validate";

export interface CompletionParsed {
  req: ChatRequest;
  includeUsage: boolean;
  echo: boolean;
}

export function parseCompletionRequest(b: Record<string, any>, agentId?: string): CompletionParsed {
  // the body schema holds prompt to a string or an array of exactly one
  const model: string = b.model;
  const prompt: string = Array.isArray(b.prompt) ? b.prompt[0] : b.prompt;
  checkUnsupported(b);
  // here logprobs is an integer (how many alternatives per token; 0 still asks for the chosen
  // tokens' logprobs), not chat's boolean: refused like chat's `logprobs: true` rather than
  // silently answered with `logprobs: null`, which clients then index into
  if (typeof b.logprobs === "number") throw bad("'logprobs' is not supported", "logprobs");
  if (typeof b.suffix === "string" && b.suffix) throw bad("'suffix' is not supported", "suffix");
  const echo: boolean = b.echo ?? false;
  const maxTokens: number | undefined = b.max_tokens ?? undefined;
  const { includeUsage, ...common } = parseCommon(b, agentId);
  return {
    req: { model, messages: [], prompt, sampling: parseSampling(b), ...(maxTokens !== undefined ? { maxTokens } : {}), ...common },
    includeUsage,
    echo,
  };
}

export function textCompletion(r: ChatResult, meta: { id: string; created: number; model: string; prefix: string }) {
  return {
    id: meta.id,
    object: "text_completion" as const,
    created: meta.created,
    model: meta.model,
    choices: [{ index: 0, text: meta.prefix + r.text, logprobs: null, finish_reason: r.finishReason === "tool_calls" ? "stop" : r.finishReason }],
    usage: openaiUsage(r.usage),
  };
}

export async function* completionChunks(
  events: AsyncIterable<ChatEvent>,
  meta: { id: string; created: number; model: string; includeUsage: boolean; prefix: string },
): AsyncGenerator<Record<string, unknown>> {
  const base = { id: meta.id, object: "text_completion", created: meta.created, model: meta.model };
  const chunk = (text: string, finish: string | null = null) => ({ ...base, choices: [{ index: 0, text, logprobs: null, finish_reason: finish }] });
  if (meta.prefix) yield chunk(meta.prefix);
  for await (const ev of events) {
    if (ev.type === "text" && ev.text) yield chunk(ev.text);
    else if (ev.type === "done") {
      yield chunk("", ev.finishReason === "tool_calls" ? "stop" : ev.finishReason);
      if (meta.includeUsage) yield { ...base, choices: [], usage: openaiUsage(ev.usage) };
      // keep reading to the end: the pipeline settles and audits then
    }
  }
}
