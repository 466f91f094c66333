// Response transform: a folded ChatResult -> OpenAI `chat.completion`.
import type { ChatResult } from "../../engines/chat/collect";
import type { Usage } from "../../engines/chat/types";

export const openaiUsage = (u: Usage) => ({
  prompt_tokens: u.promptTokens,
  completion_tokens: u.completionTokens,
  total_tokens: u.promptTokens + u.completionTokens,
});

export function chatCompletion(r: ChatResult, meta: { id: string; created: number; model: string }) {
  const calls = r.toolCalls;
  return {
    id: meta.id,
    object: "chat.completion" as const,
    created: meta.created,
    model: meta.model,
    choices: [
      {
        index: 0,
        message: {
          role: "assistant" as const,
          // a message that only carries tool calls has null content
          content: calls.length && !r.text ? null : r.text,
          refusal: null,
          ...(calls.length
            ? { tool_calls: calls.map((c) => ({ id: c.id, type: "function" as const, function: { name: c.name, arguments: c.arguments } })) }
            : {}),
        },
        logprobs: null,
        finish_reason: r.finishReason,
      },
    ],
    usage: openaiUsage(r.usage),
  };
}
