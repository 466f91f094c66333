// Who is calling, as the HTTP layer sees it: the token (Authorization: Bearer … or x-api-key,
// so OpenAI and Anthropic clients both work), the socket address (never X-Forwarded-For), the
// user agent, the request id and the route, for the gateway pipeline and its audit log.
import type { HttpContext } from "./http-context";
import type { Caller, ChatStart, InferencePipeline } from "../engines/gateway/pipeline-types";
import type { ChatRequest } from "../engines/chat/types";
import { collectChat, type ChatResult } from "../engines/chat/collect";
import { GatewayError } from "../engines/gateway/errors";
import type { Svc } from "../engines/svc";
import { clientIp, isLoopback } from "./loopback";
import { clientCancellation, isAbortError, streamEvents, type StreamOptions } from "./sse";
import type { ChatEvent } from "../engines/chat/types";
import type { Cancellation } from "../engines/chat/cancel";

export function tokenFrom(ctx: HttpContext): string | undefined {
  const auth = ctx.get("authorization");
  if (auth) {
    const m = /^Bearer\s+(\S.*)$/i.exec(auth.trim());
    if (m) return m[1].trim();
  }
  const key = ctx.get("x-api-key").trim();
  return key || undefined;
}

export function callerFrom(ctx: HttpContext): Caller {
  const route = (ctx as any)._matchedRoute;
  return {
    token: tokenFrom(ctx),
    ip: clientIp(ctx),
    loopback: isLoopback(ctx),
    userAgent: ctx.get("user-agent") || undefined,
    requestId: String(ctx.state.requestId ?? ""),
    route: typeof route === "string" ? route : ctx.path,
  };
}

/** The one enforcement pipeline every inference route goes through (attached by api/server.ts). */
export function pipelineOf(svc: Svc): InferencePipeline {
  const gw = svc.engines.gateway;
  if (!gw) throw new GatewayError(503, "model_unavailable", "inference is unavailable: the gateway engine is not running");
  return gw.pipeline;
}

/** X-Svc-Agent-Id: attribution only (it grants nothing). */
export function agentIdOf(ctx: HttpContext): string | undefined {
  const v = ctx.get("x-svc-agent-id").trim();
  return v ? v.slice(0, 200) : undefined;
}

export interface StartedChat {
  start: ChatStart;
  caller: Caller;
  /** cancelled when the client disconnects */
  cancel: Cancellation;
}

/** The client went away: nothing is left to answer, and it is not a failure worth logging. */
export function dropResponse(ctx: HttpContext): void {
  ctx.respond = false;
  if (!ctx.res.destroyed) ctx.res.destroy();
}

/** Send a validated request through the pipeline (which may refuse it with a GatewayError).
 * Returns null when the client disconnected while generation was being set up (the pipeline
 * may already wait for the first token, e.g. during prefill): the response is dropped. */
export async function startChat(ctx: HttpContext, svc: Svc, req: ChatRequest): Promise<StartedChat | null> {
  const caller = callerFrom(ctx);
  const cancel = clientCancellation(ctx);
  try {
    const start = await pipelineOf(svc).chat(caller, req, cancel);
    return { start, caller, cancel };
  } catch (e) {
    if (isAbortError(e, cancel)) {
      dropResponse(ctx);
      return null;
    }
    throw e;
  }
}

export function setHeaders(ctx: HttpContext, headers: Record<string, string> | undefined): void {
  if (!headers) return;
  for (const k in headers) ctx.set(k, headers[k]);
}

/** Fold the whole generation for a non-streaming response. Returns null when the client went
 * away meanwhile (generation was cancelled; nothing is left to answer). */
export async function collectOrAbort(ctx: HttpContext, s: StartedChat): Promise<ChatResult | null> {
  try {
    return await collectChat(s.start.events);
  } catch (e) {
    if (isAbortError(e, s.cancel)) {
      dropResponse(ctx);
      return null;
    }
    throw e;
  }
}

/** How a protocol shapes a started chat: one body when not streaming, else a rendered stream.
 * Per-request values (ids, model, …) travel in `meta`, so a route can hand module-level
 * functions here instead of making closures on every request. */
export interface ChatAnswer<M> extends Omit<StreamOptions<ChatEvent>, "headers" | "events" | "render"> {
  stream: boolean;
  meta: M;
  whole(result: ChatResult, meta: M): unknown;
  /** the protocol's stream transform, already serialized (SSE frames or NDJSON lines) */
  render(events: AsyncIterable<ChatEvent>, meta: M): AsyncIterable<string>;
}

/** Answer a started chat in the protocol's shape (the same steps for every inference route). */
export async function answerChat<M>(ctx: HttpContext, s: StartedChat, a: ChatAnswer<M>): Promise<void> {
  if (!a.stream) {
    const result = await collectOrAbort(ctx, s);
    if (!result) return;
    setHeaders(ctx, s.start.headers);
    ctx.body = a.whole(result, a.meta);
    return;
  }
  await streamEvents(ctx, {
    format: a.format,
    headers: s.start.headers,
    events: s.start.events,
    render: (events) => a.render(events, a.meta),
    onError: a.onError,
    log: a.log,
  });
}
