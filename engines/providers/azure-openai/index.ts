// Azure OpenAI (type azure-openai). Request: request.ts. Azure answers in OpenAI's chat
// completion shapes, JSON and SSE (with stream_options.include_usage), so the response and
// stream transforms are openai.ts's.
import { syncEvents } from "../../chat/collect";
import { postForJson, postJson, readJsonBody, sseMessages } from "../http";
import { eventsOfResponse, streamEvents } from "../openai";
import { primed, type ProviderAdapter } from "../types";
import { azureHeaders, azurePath, toAzureBody } from "./request";

export const azureOpenAIAdapter: ProviderAdapter = {
  async chat(t, req, cancel) {
    const path = azurePath(t);
    if (!req.stream) {
      const j = await postForJson(t.provider, t.baseUrl!, path, azureHeaders(t), toAzureBody(t, req), t.timeoutMs, cancel);
      return syncEvents(eventsOfResponse(t, req, j));
    }
    const res = await postJson(t.provider, t.baseUrl!, path, azureHeaders(t), toAzureBody(t, req), t.timeoutMs, cancel);
    if (!String(res.headers["content-type"] ?? "").includes("text/event-stream")) {
      return syncEvents(eventsOfResponse(t, req, await readJsonBody(t.provider, res, t.timeoutMs, cancel)));
    }
    return primed(streamEvents(t, req, sseMessages(t.provider, res, t.timeoutMs, cancel)));
  },
};
