// Google Gemini API (type gemini): POST {baseUrl}/models/{model}:generateContent, or
// :streamGenerateContent?alt=sse, with the key in x-goog-api-key. Vertex AI (../vertex) sends the
// same bodies elsewhere with another credential; both go through geminiChat.
import { syncEvents } from "../../chat/collect";
import type { Cancellation } from "../../chat/cancel";
import type { ChatEvent, ChatRequest } from "../../chat/types";
import { SvcError } from "../../errors";
import { postForJson, postJson, readJsonBody, sseMessages, upstreamError } from "../http";
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

/** Google answers a bad API key with 400 INVALID_ARGUMENT: that is the gateway's credential, a
 * 502 like any other vendor's 401, not the client's mistake. */
function keyRefusal(t: RouteTarget, e: unknown): unknown {
  if (e instanceof SvcError && e.kind === "invalid" && /API key not valid|API_KEY_INVALID|API key expired/i.test(e.message)) {
    return upstreamError("upstream", "upstream_error", e.message.replace(/refused the request: /, "rejected the gateway's credential (400): "));
  }
  return e;
}

export const geminiAdapter: ProviderAdapter = {
  async chat(t, req, cancel) {
    const h: Record<string, string> = { ...(t.headers ?? {}) };
    if (t.credential) h["x-goog-api-key"] = t.credential;
    try {
      return await geminiChat(t, req, cancel, `/models/${encodeURIComponent(t.upstreamModel)}`, h);
    } catch (e) {
      throw keyRefusal(t, e);
    }
  },
};
