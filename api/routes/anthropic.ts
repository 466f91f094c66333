// Anthropic Messages: POST /v1/messages (no extra provider prefix). Accepts x-api-key or a bearer
// token and the anthropic-version header; errors are rendered {type: "error", error: {type,
// message}} with the matching status.
import type { HttpContext } from "../http-context";
import type { InferenceRoute } from "../inference-route";
import type { ChatEvent } from "../../engines/chat/types";
import type { Svc } from "../../engines/svc";
import { rateHeaders, toSvcError } from "../errors";
import { jsonBody } from "../body-schema";
import { CountTokensBody, MessagesBody } from "../../schemas/api/bodies";
import { agentIdOf, answerChat, callerFrom, setHeaders, startChat } from "../caller";
import { clientCancellation } from "../sse";
import { countPromptTokens } from "../../engines/providers/count-tokens";
import { SvcError } from "../../engines/errors";
import { frames, sseEvent } from "../sse";
import { parseCountTokensRequest, parseMessagesRequest } from "../anthropic/request";
import { anthropicMessage } from "../anthropic/response";
import { messageEvents } from "../anthropic/stream";
import { anthropicErrorBody, renderAnthropic } from "../anthropic/errors";
import { newId } from "../openai/validate";


/** The POST inference routes (served by api/inference-listener.ts). */
const renderMessages = (events: AsyncIterable<ChatEvent>, meta: { id: string; model: string }) => frames(messageEvents(events, meta), (ev) => sseEvent(ev.type, ev));
const sseError = (e: unknown) => sseEvent("error", anthropicErrorBody(toSvcError(e)));

const COUNT_FIELDS = new Set(["messages", "system", "tools", "tool_choice", "thinking", "mcp_servers", "output_config"]);
const readMessages = jsonBody("post", "/v1/messages", MessagesBody);
const readCountTokens = jsonBody("post", "/v1/messages/count_tokens", CountTokensBody);

export function anthropicInference(svc: Svc): InferenceRoute[] {
  const log = (msg: string, fields?: Record<string, unknown>) => svc.log.warn(msg, fields);
  const messages = async (ctx: HttpContext) => {
    ctx.set("request-id", String(ctx.state.requestId ?? "")); // Anthropic's name for the request id
    const req = parseMessagesRequest(await readMessages(ctx), agentIdOf(ctx));
    const s = await startChat(ctx, svc, req);
    if (!s) return; // client gone
    const meta = { id: newId("msg_"), model: s.start.model };
    await answerChat(ctx, s, { stream: req.stream, meta, whole: anthropicMessage, format: "sse", render: renderMessages, onError: sseError, log });
  };
  // Counting is a request like any other at the gate (policy per provider, rate limits,
  // max_requests, audit as messages.count_tokens) but spends no budget; its policy action is
  // chat:completions (counting the prompt of a Messages call the key may make).
  const countTokens = async (ctx: HttpContext) => {
    ctx.set("request-id", String(ctx.state.requestId ?? ""));
    const body = await readCountTokens(ctx);
    const req = parseCountTokensRequest(body);
    const gw = svc.engines.gateway;
    if (!gw) throw new SvcError("unavailable", "model_unavailable", "the gateway engine is not running");
    const targets = gw.router.targets(req.model);
    if (!targets.length) throw new SvcError("not_found", "model_not_found", `model ${req.model} is not served by this gateway or not allowed for this key`, "model");
    const caller = callerFrom(ctx);
    // what Anthropic's count_tokens accepts, forwarded as sent to an Anthropic upstream
    const rest = Object.fromEntries(Object.entries(body).filter(([k]) => COUNT_FIELDS.has(k)));
    const call = { action: "chat:completions", scope: "inference" as const, audit: "messages.count_tokens", model: req.model, metered: true, spendMicros: 0, unbudgeted: true, targets };
    const n = await gw.gate.call(
      caller,
      call,
      (v) => {
        setHeaders(ctx, rateHeaders(v.rate));
        return countPromptTokens(v.targets!, gw.router, svc.engines.pool, req, rest, clientCancellation(ctx));
      },
      (v) => ({ provider: v.targets![0]?.provider }),
    );
    ctx.set("x-svc-token-count", n.source);
    ctx.body = { input_tokens: n.inputTokens };
  };
  return [
    { path: "/v1/messages", renderError: renderAnthropic, handle: messages },
    { path: "/v1/messages/count_tokens", renderError: renderAnthropic, handle: countTokens },
  ];
}
