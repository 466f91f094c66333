// Gemini answer (GenerateContentResponse, one per SSE message when streaming) to ChatEvents.
// Gemini's function calls carry no id (newer models may send one): svc names them call_<n>.
// Finish reasons: MAX_TOKENS -> length; a response with function calls -> tool_calls (Gemini
// says STOP); blocked answers (SAFETY, RECITATION, …) end as stop with whatever text came.
import type { ChatEvent, ChatRequest, FinishReason, Usage } from "../../chat/types";
import { estimateTokens } from "../estimate";
import { upstreamError, upstreamText } from "../http";
import type { RouteTarget } from "../types";
import { idWithSignature } from "./thought-signature";

export interface GeminiFold {
  calls: number;
  chars: number;
  finish?: string;
  usage?: { promptTokenCount?: number; candidatesTokenCount?: number; thoughtsTokenCount?: number };
}

export const newFold = (): GeminiFold => ({ calls: 0, chars: 0 });

/** Events of one GenerateContentResponse (the whole answer, or one stream chunk). */
export function* chunkEvents(t: RouteTarget, j: any, f: GeminiFold): Generator<ChatEvent> {
  if (j?.error) throw upstreamError("upstream", "upstream_error", `provider ${t.provider} failed: ${upstreamText(String(j.error.message ?? JSON.stringify(j.error)), 500)}`);
  if (j?.usageMetadata) f.usage = j.usageMetadata;
  const cand = j?.candidates?.[0];
  if (!cand) {
    const block = j?.promptFeedback?.blockReason;
    if (block) f.finish = String(block);
    return;
  }
  for (const p of cand.content?.parts ?? []) {
    if (typeof p.text === "string" && p.text && !p.thought) {
      f.chars += p.text.length;
      yield { type: "text", text: p.text };
    } else if (p.functionCall) {
      const i = f.calls++;
      const args = JSON.stringify(p.functionCall.args ?? {});
      f.chars += args.length;
      const id = typeof p.functionCall.id === "string" ? p.functionCall.id : `call_${i}`;
      yield { type: "tool_call_start", index: i, id: idWithSignature(id, p.thoughtSignature), name: String(p.functionCall.name ?? "") };
      yield { type: "tool_call_delta", index: i, argumentsDelta: args };
    }
  }
  if (cand.finishReason) f.finish = String(cand.finishReason);
}

/** Output tokens: the answer's (candidatesTokenCount) plus the thinking tokens of 2.5+ models
 * (thoughtsTokenCount), which Gemini counts apart but bills as output, as OpenAI counts reasoning
 * tokens in completion_tokens. With candidates only, a thinking model's usage and cost missed
 * most of the output (and prompt + completion fell short of totalTokenCount). */
function completionTokens(f: GeminiFold): number {
  const u = f.usage;
  const thoughts = typeof u?.thoughtsTokenCount === "number" ? u.thoughtsTokenCount : 0;
  if (typeof u?.candidatesTokenCount === "number") return u.candidatesTokenCount + thoughts;
  return thoughts > 0 ? thoughts + Math.ceil(f.chars / 4) : Math.ceil(f.chars / 4);
}

export function doneEvent(req: ChatRequest, f: GeminiFold): ChatEvent {
  const finishReason: FinishReason = f.calls > 0 ? "tool_calls" : f.finish === "MAX_TOKENS" ? "length" : "stop";
  const usage: Usage = {
    promptTokens: f.usage?.promptTokenCount ?? estimateTokens(req),
    completionTokens: completionTokens(f),
  };
  return { type: "done", finishReason, usage };
}

export function* responseEvents(t: RouteTarget, req: ChatRequest, j: any): Generator<ChatEvent> {
  if (!Array.isArray(j?.candidates) && !j?.promptFeedback) throw upstreamError("upstream", "upstream_error", `provider ${t.provider} sent no candidates`);
  const f = newFold();
  yield* chunkEvents(t, j, f);
  yield doneEvent(req, f);
}
