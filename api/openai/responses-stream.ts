// Stream transform: internal ChatEvents -> Responses API events (response.created,
// response.in_progress, response.output_item.added, response.content_part.added,
// response.output_text.delta/done, response.content_part.done, response.function_call_arguments
// .delta/done, response.output_item.done, response.completed | response.incomplete), each with a
// sequence_number, as the openai SDK's responses.stream() accumulates them.
import type { ChatEvent, ToolCall } from "../../engines/chat/types";
import { functionCallItem, messageItem, outputText, responseObject, statusOf, type ResponseMeta } from "./responses-response";
import { newId } from "./validate";

type Ev = { type: string; [k: string]: unknown };

export async function* responseEvents(events: AsyncIterable<ChatEvent>, meta: ResponseMeta): AsyncGenerator<Ev> {
  let seq = 0;
  const ev = (type: string, body: Record<string, unknown>): Ev => ({ type, sequence_number: seq++, ...body });
  const output: unknown[] = []; // finished items, by output_index
  let text: { id: string; index: number; text: string } | null = null;
  const calls = new Map<number, { id: string; index: number; call: ToolCall }>(); // by ChatEvent tool index

  yield ev("response.created", { response: responseObject(meta, "in_progress", [], null) });
  yield ev("response.in_progress", { response: responseObject(meta, "in_progress", [], null) });

  function* closeText(status: "completed" | "incomplete"): Generator<Ev> {
    if (!text) return;
    const t = text;
    text = null;
    yield ev("response.output_text.done", { item_id: t.id, output_index: t.index, content_index: 0, text: t.text, logprobs: [] });
    yield ev("response.content_part.done", { item_id: t.id, output_index: t.index, content_index: 0, part: outputText(t.text) });
    const item = messageItem(t.id, t.text, status);
    output[t.index] = item;
    yield ev("response.output_item.done", { output_index: t.index, item });
  }
  function* openText(): Generator<Ev> {
    const t = { id: newId("msg_"), index: output.length, text: "" };
    output.push(null); // reserve the index
    text = t;
    yield ev("response.output_item.added", { output_index: t.index, item: messageItem(t.id, null, "in_progress") });
    yield ev("response.content_part.added", { item_id: t.id, output_index: t.index, content_index: 0, part: outputText("") });
  }
  function* closeCall(c: { id: string; index: number; call: ToolCall }, status: "completed" | "incomplete"): Generator<Ev> {
    yield ev("response.function_call_arguments.done", { item_id: c.id, output_index: c.index, name: c.call.name, arguments: c.call.arguments });
    const item = functionCallItem(c.id, c.call, status);
    output[c.index] = item;
    yield ev("response.output_item.done", { output_index: c.index, item });
  }

  for await (const e of events) {
    switch (e.type) {
      case "text": {
        if (!e.text) break;
        if (!text) yield* openText();
        const t = text!;
        t.text += e.text;
        yield ev("response.output_text.delta", { item_id: t.id, output_index: t.index, content_index: 0, delta: e.text, logprobs: [] });
        break;
      }
      case "tool_call_start": {
        yield* closeText("completed");
        const c = { id: newId("fc_"), index: output.length, call: { id: e.id, name: e.name, arguments: "" } };
        output.push(null);
        calls.set(e.index, c);
        yield ev("response.output_item.added", { output_index: c.index, item: functionCallItem(c.id, c.call, "in_progress") });
        break;
      }
      case "tool_call_delta": {
        const c = calls.get(e.index);
        if (!c || !e.argumentsDelta) break;
        c.call.arguments += e.argumentsDelta;
        yield ev("response.function_call_arguments.delta", { item_id: c.id, output_index: c.index, delta: e.argumentsDelta });
        break;
      }
      case "done": {
        const status = statusOf(e.finishReason);
        const itemStatus = status === "incomplete" ? "incomplete" : "completed";
        if (!text && output.length === 0) yield* openText(); // an empty answer is still one message
        yield* closeText(itemStatus);
        for (const c of calls.values()) yield* closeCall(c, "completed");
        const final = responseObject(meta, status, output, e.usage);
        yield ev(status === "incomplete" ? "response.incomplete" : "response.completed", { response: final });
        break;
      }
    }
  }
}
