// Folds a stream of ChatEvents into one complete response, for non-streaming routes.
import type { ChatEvent, FinishReason, ToolCall, Usage } from "./types";

export interface ChatResult {
  text: string;
  toolCalls: ToolCall[];
  finishReason: FinishReason;
  usage: Usage;
}

export async function collectChat(events: AsyncIterable<ChatEvent>): Promise<ChatResult> {
  let text = "";
  const calls: ToolCall[] = [];
  let finishReason: FinishReason = "stop";
  let usage: Usage = { promptTokens: 0, completionTokens: 0 };
  for await (const ev of events) {
    switch (ev.type) {
      case "text":
        text += ev.text;
        break;
      case "tool_call_start":
        calls[ev.index] = { id: ev.id, name: ev.name, arguments: "" };
        break;
      case "tool_call_delta":
        calls[ev.index].arguments += ev.argumentsDelta;
        break;
      case "done":
        finishReason = ev.finishReason;
        usage = ev.usage;
        break;
    }
  }
  return { text, toolCalls: calls.filter(Boolean), finishReason, usage };
}
