// Response transform: a folded ChatResult -> Anthropic `message`.
import type { ChatResult } from "../../engines/chat/collect";
import type { FinishReason } from "../../engines/chat/types";
import { argsToObject } from "../openai/validate";

/** stop_sequence when the engine named the caller's stop sequence that matched, else end_turn. */
export const stopReason = (f: FinishReason, stopSequence?: string) =>
  f === "length" ? "max_tokens" : f === "tool_calls" ? "tool_use" : stopSequence !== undefined ? "stop_sequence" : "end_turn";

export function anthropicMessage(r: ChatResult, meta: { id: string; model: string }) {
  const content: unknown[] = [];
  if (r.text || r.toolCalls.length === 0) content.push({ type: "text", text: r.text });
  for (const c of r.toolCalls) content.push({ type: "tool_use", id: c.id, name: c.name, input: argsToObject(c.arguments) });
  return {
    id: meta.id,
    type: "message" as const,
    role: "assistant" as const,
    model: meta.model,
    content,
    stop_reason: stopReason(r.finishReason, r.stopSequence),
    stop_sequence: r.finishReason === "stop" ? (r.stopSequence ?? null) : null,
    usage: { input_tokens: r.usage.promptTokens, output_tokens: r.usage.completionTokens },
  };
}
