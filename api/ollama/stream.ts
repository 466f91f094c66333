// Stream transforms: internal ChatEvents -> Ollama NDJSON objects. Text pieces arrive as
// {message: {role, content}, done: false} (chat) or {response, done: false} (generate); tool
// calls are sent whole, with arguments as an object, once their arguments are complete; the last
// line is {done: true, done_reason, …counts and durations}.
import type { ChatEvent, ToolCall } from "../../engines/chat/types";
import { doneReason, finalStats, ollamaToolCalls, type Timing } from "./response";

const createdAt = () => new Date().toISOString();

export async function* chatLines(events: AsyncIterable<ChatEvent>, model: string, t: Timing): AsyncGenerator<Record<string, unknown>> {
  const calls: ToolCall[] = [];
  const line = (message: Record<string, unknown>) => ({ model, created_at: createdAt(), message: { role: "assistant", ...message }, done: false });
  for await (const e of events) {
    t.firstNs ??= process.hrtime.bigint();
    switch (e.type) {
      case "text":
        if (e.text) yield line({ content: e.text });
        break;
      case "tool_call_start":
        calls[e.index] = { id: e.id, name: e.name, arguments: "" };
        break;
      case "tool_call_delta":
        if (calls[e.index]) calls[e.index].arguments += e.argumentsDelta;
        break;
      case "done": {
        const done = calls.filter(Boolean);
        if (done.length) yield line({ content: "", tool_calls: ollamaToolCalls(done) });
        yield {
          model,
          created_at: createdAt(),
          message: { role: "assistant", content: "" },
          done_reason: doneReason(e.finishReason),
          done: true,
          ...finalStats(t, e.usage),
        };
        break;
      }
    }
  }
}

export async function* generateLines(events: AsyncIterable<ChatEvent>, model: string, t: Timing): AsyncGenerator<Record<string, unknown>> {
  for await (const e of events) {
    t.firstNs ??= process.hrtime.bigint();
    if (e.type === "text" && e.text) yield { model, created_at: createdAt(), response: e.text, done: false };
    else if (e.type === "done") {
      yield { model, created_at: createdAt(), response: "", done: true, done_reason: doneReason(e.finishReason), ...finalStats(t, e.usage) };
      // keep reading to the end: the pipeline settles and audits then
    }
  }
}
