// Stream transform: internal ChatEvents -> OpenAI `chat.completion.chunk` objects. The role comes
// first, then content pieces; a tool call opens with {index, id, type, function: {name,
// arguments: ""}} and its arguments follow in later chunks; finish_reason is null until the final
// chunk; with stream_options.include_usage a last chunk with empty choices carries usage.
import type { ChatEvent } from "../../engines/chat/types";
import { openaiUsage } from "./chat-response";

export interface ChunkMeta {
  id: string;
  created: number;
  model: string;
  includeUsage: boolean;
}

export async function* chatChunks(events: AsyncIterable<ChatEvent>, meta: ChunkMeta): AsyncGenerator<Record<string, unknown>> {
  const base = { id: meta.id, object: "chat.completion.chunk", created: meta.created, model: meta.model };
  const extra = meta.includeUsage ? { usage: null } : {};
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
    ...base,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    ...extra,
  });
  yield chunk({ role: "assistant", content: "" });
  for await (const ev of events) {
    switch (ev.type) {
      case "text":
        if (ev.text) yield chunk({ content: ev.text });
        break;
      case "tool_call_start":
        yield chunk({ tool_calls: [{ index: ev.index, id: ev.id, type: "function", function: { name: ev.name, arguments: "" } }] });
        break;
      case "tool_call_delta":
        if (ev.argumentsDelta) yield chunk({ tool_calls: [{ index: ev.index, function: { arguments: ev.argumentsDelta } }] });
        break;
      case "done":
        yield chunk({}, ev.finishReason);
        if (meta.includeUsage) yield { ...base, choices: [], usage: openaiUsage(ev.usage) };
        break; // keep reading: the pipeline settles and audits when its events end
    }
  }
}
