// Response transform: a folded ChatResult -> OpenAI Responses `response` object.
import type { ChatResult } from "../../engines/chat/collect";
import type { FinishReason, ToolCall, Usage } from "../../engines/chat/types";
import type { ResponsesEcho } from "./responses-request";
import { newId } from "./validate";

export interface ResponseMeta {
  id: string;
  createdAt: number;
  model: string;
  echo: ResponsesEcho;
}

export const responsesUsage = (u: Usage) => ({
  input_tokens: u.promptTokens,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: u.completionTokens,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: u.promptTokens + u.completionTokens,
});

export const outputText = (text: string) => ({ type: "output_text" as const, text, annotations: [] as unknown[], logprobs: [] as unknown[] });

export function messageItem(id: string, text: string | null, status: "in_progress" | "completed" | "incomplete") {
  return { type: "message" as const, id, status, role: "assistant" as const, content: text === null ? [] : [outputText(text)] };
}

export function functionCallItem(id: string, call: ToolCall, status: "in_progress" | "completed" | "incomplete") {
  return { type: "function_call" as const, id, call_id: call.id, name: call.name, arguments: call.arguments, status };
}

export type Status = "in_progress" | "completed" | "incomplete";

export function statusOf(finish: FinishReason): Status {
  return finish === "length" ? "incomplete" : "completed";
}

export function responseObject(meta: ResponseMeta, status: Status, output: unknown[], usage: Usage | null) {
  return {
    id: meta.id,
    object: "response" as const,
    created_at: meta.createdAt,
    status,
    error: null,
    incomplete_details: status === "incomplete" ? { reason: "max_output_tokens" } : null,
    model: meta.model,
    output,
    usage: usage ? responsesUsage(usage) : null,
    ...meta.echo,
  };
}

export function responseFromResult(r: ChatResult, meta: ResponseMeta) {
  const status = statusOf(r.finishReason);
  const output: unknown[] = [];
  if (r.text || r.toolCalls.length === 0) output.push(messageItem(newId("msg_"), r.text, status));
  for (const c of r.toolCalls) output.push(functionCallItem(newId("fc_"), c, "completed"));
  return responseObject(meta, status, output, r.usage);
}
