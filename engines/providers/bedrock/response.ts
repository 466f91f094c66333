// Bedrock Converse answer to ChatEvents, and the stop reasons both transforms share.
import type { ChatEvent, ChatRequest, FinishReason } from "../../chat/types";
import { estimateTokens } from "../estimate";
import { upstreamError } from "../http";
import type { RouteTarget } from "../types";

export const finishOf = (r: unknown, calls: number): FinishReason =>
  r === "max_tokens" ? "length" : r === "tool_use" || calls > 0 ? "tool_calls" : "stop";

export function* converseEvents(t: RouteTarget, req: ChatRequest, j: any): Generator<ChatEvent> {
  const content = j?.output?.message?.content;
  if (!Array.isArray(content)) throw upstreamError("upstream", "upstream_error", `provider ${t.provider} sent no output message`);
  let calls = 0;
  let chars = 0;
  for (const b of content) {
    if (typeof b.text === "string" && b.text) {
      chars += b.text.length;
      yield { type: "text", text: b.text };
    } else if (b.toolUse) {
      const i = calls++;
      const args = JSON.stringify(b.toolUse.input ?? {});
      yield { type: "tool_call_start", index: i, id: String(b.toolUse.toolUseId ?? `call_${i}`), name: String(b.toolUse.name ?? "") };
      yield { type: "tool_call_delta", index: i, argumentsDelta: args };
    }
  }
  yield {
    type: "done",
    finishReason: finishOf(j.stopReason, calls),
    usage: { promptTokens: j.usage?.inputTokens ?? estimateTokens(req), completionTokens: j.usage?.outputTokens ?? Math.ceil(chars / 4) },
  };
}
