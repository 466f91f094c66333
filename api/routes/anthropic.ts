// Anthropic Messages: POST /v1/messages (no extra provider prefix). Accepts x-api-key or a bearer
// token and the anthropic-version header; errors are rendered {type: "error", error: {type,
// message}} with the matching status.
import type { HttpContext } from "../http-context";
import type { InferenceRoute } from "../inference-route";
import type { ChatEvent } from "../../engines/chat/types";
import type { Svc } from "../../engines/svc";
import { toGatewayError } from "../errors";
import { readJson } from "../body";
import { agentIdOf, answerChat, startChat } from "../caller";
import { frames, sseEvent } from "../sse";
import { parseMessagesRequest } from "../anthropic/request";
import { anthropicMessage } from "../anthropic/response";
import { messageEvents } from "../anthropic/stream";
import { anthropicErrorBody, renderAnthropic } from "../anthropic/errors";
import { newId } from "../openai/validate";


/** The POST inference routes (served by api/inference-listener.ts). */
const renderMessages = (events: AsyncIterable<ChatEvent>, meta: { id: string; model: string }) => frames(messageEvents(events, meta), (ev) => sseEvent(ev.type, ev));
const sseError = (e: unknown) => sseEvent("error", anthropicErrorBody(toGatewayError(e)));

export function anthropicInference(svc: Svc): InferenceRoute[] {
  const log = (msg: string, fields?: Record<string, unknown>) => svc.log.warn(msg, fields);
  const messages = async (ctx: HttpContext) => {
    ctx.set("request-id", String(ctx.state.requestId ?? "")); // Anthropic's name for the request id
    const req = parseMessagesRequest(await readJson(ctx), agentIdOf(ctx));
    const s = await startChat(ctx, svc, req);
    if (!s) return; // client gone
    const meta = { id: newId("msg_"), model: s.start.model };
    await answerChat(ctx, s, { stream: req.stream, meta, whole: anthropicMessage, format: "sse", render: renderMessages, onError: sseError, log });
  };
  return [{ path: "/v1/messages", renderError: renderAnthropic, handle: messages }];
}
