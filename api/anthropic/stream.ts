// Stream transform: internal ChatEvents -> Anthropic Messages stream events: message_start,
// content_block_start, ping, content_block_delta (text_delta | input_json_delta),
// content_block_stop, message_delta (stop_reason, usage), message_stop.
import type { ChatEvent } from "../../engines/chat/types";
import { stopReason } from "./response";

type Ev = { type: string; [k: string]: unknown };

export async function* messageEvents(events: AsyncIterable<ChatEvent>, meta: { id: string; model: string }): AsyncGenerator<Ev> {
  yield {
    type: "message_start",
    message: {
      id: meta.id,
      type: "message",
      role: "assistant",
      model: meta.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      // prompt tokens are known only at the end; message_delta carries the final input_tokens
      usage: { input_tokens: 0, output_tokens: 0 },
    },
  };
  let index = -1; // current content block
  let open: "text" | "tool" | null = null;
  const toolBlock = new Map<number, number>(); // ChatEvent tool index -> content block index
  const close = function* (): Generator<Ev> {
    if (open) yield { type: "content_block_stop", index };
    open = null;
  };
  let pinged = false;
  // one ping after the first block opens, where Anthropic's API sends it
  const ping = function* (): Generator<Ev> {
    if (pinged) return;
    pinged = true;
    yield { type: "ping" };
  };
  for await (const e of events) {
    switch (e.type) {
      case "text":
        if (!e.text) break;
        if (open !== "text") {
          yield* close();
          index++;
          open = "text";
          yield { type: "content_block_start", index, content_block: { type: "text", text: "" } };
          yield* ping();
        }
        yield { type: "content_block_delta", index, delta: { type: "text_delta", text: e.text } };
        break;
      case "tool_call_start":
        yield* close();
        index++;
        open = "tool";
        toolBlock.set(e.index, index);
        yield { type: "content_block_start", index, content_block: { type: "tool_use", id: e.id, name: e.name, input: {} } };
        yield* ping();
        break;
      case "tool_call_delta": {
        const at = toolBlock.get(e.index);
        if (at === undefined || !e.argumentsDelta) break;
        yield { type: "content_block_delta", index: at, delta: { type: "input_json_delta", partial_json: e.argumentsDelta } };
        break;
      }
      case "done":
        if (index < 0) {
          // an empty answer is still one (empty) text block
          index = 0;
          open = "text";
          yield { type: "content_block_start", index, content_block: { type: "text", text: "" } };
        }
        yield* close();
        yield {
          type: "message_delta",
          delta: { stop_reason: stopReason(e.finishReason, e.stopSequence), stop_sequence: e.finishReason === "stop" ? (e.stopSequence ?? null) : null },
          usage: { input_tokens: e.usage.promptTokens, output_tokens: e.usage.completionTokens },
        };
        yield { type: "message_stop" };
        break;
    }
  }
}
