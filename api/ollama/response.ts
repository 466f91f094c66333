// Response transforms: a folded ChatResult -> Ollama /api/chat and /api/generate objects.
// Durations are nanoseconds, as Ollama reports them.
import type { ChatResult } from "../../engines/chat/collect";
import type { FinishReason, ToolCall, Usage } from "../../engines/chat/types";
import { argsToObject } from "../openai/validate";

export interface Timing {
  /** process.hrtime.bigint() when the request arrived */
  startNs: bigint;
  /** when the first event (token) came */
  firstNs?: bigint;
}

export const doneReason = (f: FinishReason) => (f === "length" ? "length" : "stop");

export const ollamaToolCalls = (calls: ToolCall[]) => calls.map((c) => ({ function: { name: c.name, arguments: argsToObject(c.arguments) } }));

export function finalStats(t: Timing, usage: Usage) {
  const end = process.hrtime.bigint();
  const first = t.firstNs ?? end;
  return {
    total_duration: Number(end - t.startNs),
    load_duration: 0,
    prompt_eval_count: usage.promptTokens,
    prompt_eval_duration: Number(first - t.startNs),
    eval_count: usage.completionTokens,
    eval_duration: Number(end - first),
  };
}

const createdAt = () => new Date().toISOString();

export function chatResponse(r: ChatResult, model: string, t: Timing) {
  return {
    model,
    created_at: createdAt(),
    message: { role: "assistant" as const, content: r.text, ...(r.toolCalls.length ? { tool_calls: ollamaToolCalls(r.toolCalls) } : {}) },
    done_reason: doneReason(r.finishReason),
    done: true as const,
    ...finalStats(t, r.usage),
  };
}

export function generateResponse(r: ChatResult, model: string, t: Timing) {
  return { model, created_at: createdAt(), response: r.text, done: true as const, done_reason: doneReason(r.finishReason), ...finalStats(t, r.usage) };
}

/** /api/generate with an empty prompt: Ollama's "load the model" (or, keep_alive 0, "unload") answer. */
export function loadResponse(model: string, reason: "load" | "unload" = "load") {
  return { model, created_at: createdAt(), response: "", done: true as const, done_reason: reason };
}

/** /api/chat with no messages: the same, in the chat shape. */
export function chatLoadResponse(model: string, reason: "load" | "unload") {
  return { model, created_at: createdAt(), message: { role: "assistant" as const, content: "" }, done_reason: reason, done: true as const };
}

/** Pass events through, noting when the first one arrived (prompt evaluation ends there). */
export async function* timed<T>(events: AsyncIterable<T>, t: Timing): AsyncGenerator<T> {
  for await (const e of events) {
    t.firstNs ??= process.hrtime.bigint();
    yield e;
  }
}
