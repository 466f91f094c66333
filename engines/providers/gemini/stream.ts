// Gemini streaming (:streamGenerateContent?alt=sse): each SSE message is a whole
// GenerateContentResponse holding the next piece; usageMetadata comes with the last ones.
import type { ChatEvent, ChatRequest } from "../../chat/types";
import type { RouteTarget } from "../types";
import { chunkEvents, doneEvent, newFold } from "./response";

export async function* geminiStreamEvents(t: RouteTarget, req: ChatRequest, messages: AsyncIterable<{ data: string }>): AsyncGenerator<ChatEvent> {
  const f = newFold();
  for await (const m of messages) {
    let j: any;
    try {
      j = JSON.parse(m.data);
    } catch {
      continue;
    }
    yield* chunkEvents(t, Array.isArray(j) ? j[0] : j, f);
  }
  yield doneEvent(req, f);
}
