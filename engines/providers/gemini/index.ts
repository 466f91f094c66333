// Google Gemini API (type gemini): POST {baseUrl}/models/{model}:generateContent, or
// :streamGenerateContent?alt=sse, with the key in x-goog-api-key. Vertex AI (../vertex) sends the
// same bodies elsewhere with another credential; both go through geminiChat.
import { syncEvents } from "../../chat/collect";
import type { Cancellation } from "../../chat/cancel";
import type { ChatEvent, ChatRequest } from "../../chat/types";
import { postForJson, postJson, readJsonBody, sseMessages } from "../http";
import { primed, type ProviderAdapter, type RouteTarget } from "../types";
import { toGeminiBody } from "./request";
import { responseEvents } from "./response";
import { geminiStreamEvents } from "./stream";

export const GEMINI_DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta";

/** generateContent at `modelPath` (…/models/{model}) with `headers`. */
export async function geminiChat(t: RouteTarget, req: ChatRequest, cancel: Cancellation, modelPath: string, headers: Record<string, string>): Promise<AsyncIterable<ChatEvent>> {
  const body = toGeminiBody(t, req);
  if (!req.stream) {
    const j = await postForJson(t.provider, t.baseUrl!, `${modelPath}:generateContent`, headers, body, t.timeoutMs, cancel);
    return syncEvents(responseEvents(t, req, j));
  }
  const res = await postJson(t.provider, t.baseUrl!, `${modelPath}:streamGenerateContent?alt=sse`, headers, body, t.timeoutMs, cancel);
  if (!String(res.headers["content-type"] ?? "").includes("text/event-stream")) {
    return syncEvents(responseEvents(t, req, await readJsonBody(t.provider, res, t.timeoutMs, cancel)));
  }
  return primed(geminiStreamEvents(t, req, sseMessages(t.provider, res, t.timeoutMs, cancel)));
}

export const geminiAdapter: ProviderAdapter = {
  chat(t, req, cancel) {
    const h: Record<string, string> = { ...(t.headers ?? {}) };
    if (t.credential) h["x-goog-api-key"] = t.credential;
    return geminiChat(t, req, cancel, `/models/${encodeURIComponent(t.upstreamModel)}`, h);
  },
};
