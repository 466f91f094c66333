// Who is calling, as the HTTP layer sees it: the token (Authorization: Bearer / Token / Basic, or
// x-api-key, so OpenAI, Anthropic and plain HTTP clients all work), the socket address (never X-Forwarded-For), the
// user agent, the request id and the route, for the gateway pipeline and its audit log.
import { setOwnHeader, type HttpContext } from "./http-context";
import type { Caller, ChatStart, InferencePipeline } from "../engines/gateway/pipeline-types";
import type { ChatRequest } from "../engines/chat/types";
import { collectChat, collectSync, isSyncEvents, type ChatResult, type SyncEvents } from "../engines/chat/collect";
import { SvcError } from "../engines/errors";
import { SECRET_PREFIX, type KeyEntry } from "../engines/gateway/keys";
import type { Svc } from "../engines/svc";
import { clientIp, isLoopback } from "./loopback";
import { rateHeaders } from "./errors";
import { cacheDirectivesOf } from "./cache-headers";
import { clientCancellation, isAbortError, streamEvents, type StreamOptions } from "./sse";
import type { ChatEvent } from "../engines/chat/types";
import type { Cancellation } from "../engines/chat/cancel";
import { traceField, type Span } from "../engines/telemetry";

/** How a key may be sent (named in every 401 about a credential that cannot be used). */
export const ACCEPTED_KEY_FORMS =
  "send the key as Authorization: Bearer <key> (also accepted: Authorization: Token <key>, Authorization: Basic with the key as user name or password, or an x-api-key header)";

const unusable = (why: string) => new SvcError("unauthenticated", "invalid_api_key", `${why}; ${ACCEPTED_KEY_FORMS}`);

/** The key a request carries, or undefined when it sends none. A credential in a form svc does
 * not read (another Authorization scheme, an empty one, ?api_key= in the URL) is a 401, never
 * taken as "no key": the caller meant to authenticate. */
export function tokenFrom(ctx: HttpContext): string | undefined {
  const url = ctx.req.url;
  // keys in URLs end up in access logs, proxies and browser history: refused, not read
  if (url !== undefined && url.includes("api_key") && hasQueryKey(url)) {
    throw unusable("API keys are not accepted in the query string (api_key=…)");
  }
  const auth = ctx.get("authorization");
  if (auth) return fromAuthorization(auth);
  const key = ctx.get("x-api-key").trim();
  return key || undefined;
}

function hasQueryKey(url: string): boolean {
  const q = url.indexOf("?");
  return q >= 0 && new URLSearchParams(url.slice(q + 1)).has("api_key");
}

function fromAuthorization(raw: string): string {
  const v = raw.trim();
  let sp = v.indexOf(" ");
  if (sp < 0) sp = v.indexOf("\t");
  const scheme = (sp < 0 ? v : v.slice(0, sp)).toLowerCase();
  const cred = sp < 0 ? "" : v.slice(sp + 1).trim();
  if (scheme === "bearer" || scheme === "token") {
    if (cred) return cred;
    throw unusable(`the Authorization header's ${scheme === "bearer" ? "Bearer" : "Token"} value is empty`);
  }
  if (scheme === "basic") return basicKey(cred);
  throw unusable(`the Authorization scheme ${JSON.stringify(scheme.slice(0, 20))} is not supported`);
}

/** Basic credentials (base64 of user:password): the key is whichever part looks like an svc key,
 * else the password, else the user name (`curl -u <key>:` sends it as the user name). */
function basicKey(b64: string): string {
  const text = b64 ? Buffer.from(b64, "base64").toString("utf8") : "";
  const colon = text.indexOf(":");
  if (colon < 0) throw unusable("the Authorization: Basic value is not base64 of user:password");
  const user = text.slice(0, colon).trim();
  const pass = text.slice(colon + 1).trim();
  if (pass.startsWith(SECRET_PREFIX)) return pass;
  if (user.startsWith(SECRET_PREFIX)) return user;
  const key = pass || user;
  if (!key) throw unusable("the Authorization: Basic value holds no key");
  return key;
}

/** The routes whose model call is an embedding (audited as `embeddings`, not chat). */
const EMBEDDING_ROUTES = new Set(["/v1/embeddings", "/api/embed", "/api/embeddings"]);

/** Who is calling; built once per request (kept in ctx.state) and carrying the key once it was
 * authenticated, so the pipeline does not authenticate a second time. */
export function callerFrom(ctx: HttpContext): Caller {
  const known = ctx.state.caller as Caller | undefined;
  if (known) return known;
  const route = ctx._matchedRoute;
  const caller: Caller = {
    token: tokenFrom(ctx),
    ip: clientIp(ctx),
    loopback: isLoopback(ctx),
    userAgent: ctx.get("user-agent") || undefined,
    requestId: String(ctx.state.requestId ?? ""),
    route: typeof route === "string" ? route : ctx.path,
    key: undefined,
    trace: ctx.state.span,
  };
  if (EMBEDDING_ROUTES.has(caller.route)) caller.modelCall = "embeddings";
  const cc = ctx.get("cache-control");
  if (cc) caller.cache = cacheDirectivesOf(cc);
  ctx.state.caller = caller;
  return caller;
}

/** Authenticate an inference request before its body is read (a bad key with a bad body is a
 * 401, not a 400). Without a gateway engine the route itself answers 503. */
export function authenticateCaller(ctx: HttpContext, svc: Svc): void {
  const gw = svc.engines.gateway;
  if (!gw) return;
  const caller = callerFrom(ctx);
  caller.key = gw.pipeline.admit(caller);
}

/** The one enforcement pipeline every inference route goes through (attached by boot/start.ts). */
export function pipelineOf(svc: Svc): InferencePipeline {
  const gw = svc.engines.gateway;
  if (!gw) throw new SvcError("unavailable", "model_unavailable", "inference is unavailable: the gateway engine is not running");
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

/** Send a validated request through the pipeline (which may refuse it with a SvcError).
 * Returns null when the client disconnected while generation was being set up (the pipeline
 * may already wait for the first token, e.g. during prefill): the response is dropped. */
export async function startChat(ctx: HttpContext, svc: Svc, req: ChatRequest): Promise<StartedChat | null> {
  const caller = callerFrom(ctx);
  const cancel = clientCancellation(ctx);
  try {
    const start = await pipelineOf(svc).chat(caller, req, cancel);
    // X-Svc-Agent-Id on a protocol route: the turn goes to that agent's memory once answered
    if (req.agentId && svc.engines.memory && svc.engines.memory.refusal(req.agentId) === null) {
      start.events = recordTurn(svc, req, ctx.get("x-svc-conversation-id").trim().slice(0, 200) || req.sessionId || "default", start.events, caller.trace);
    }
    return { start, caller, cancel };
  } catch (e) {
    if (isAbortError(e, cancel)) {
      dropResponse(ctx);
      return null;
    }
    throw e;
  }
}

/** Pass the events through; when the answer completed, buffer the turn (user text, answer). */
async function* recordTurn(svc: Svc, req: ChatRequest, conversationId: string, events: AsyncIterable<ChatEvent>, trace: Span | undefined): AsyncGenerator<ChatEvent> {
  let text = "";
  let done = false;
  for await (const ev of events) {
    if (ev.type === "text") text += ev.text;
    else if (ev.type === "done") done = true;
    yield ev;
  }
  if (!done) return;
  let user = req.prompt ?? "";
  for (let i = req.messages.length - 1; i >= 0 && !user; i--) if (req.messages[i].role === "user") user = req.messages[i].content;
  try {
    await svc.engines.memory?.recordTurn({ agent: req.agentId!, conversationId, source: "chat", user, assistant: text });
  } catch (e: any) {
    svc.log.warn("memory could not buffer a turn", { agent: req.agentId, err: String(e?.message ?? e), ...traceField(trace) });
  }
}

/** Headers svc built (rate windows, the cache state): set without a per-value regex check. */
export function setHeaders(ctx: HttpContext, headers: Record<string, string> | undefined): void {
  if (!headers) return;
  for (const k in headers) setOwnHeader(ctx, k, headers[k]);
}


/** Fold the whole generation for a non-streaming response. Returns null when the client went
 * away meanwhile (generation was cancelled; nothing is left to answer). */
export async function collectOrAbort(ctx: HttpContext, s: StartedChat): Promise<ChatResult | null> {
  try {
    return await collectChat(s.start.events);
  } catch (e) {
    return abortedOrThrow(ctx, s, e);
  }
}

/** collectOrAbort for an answer known up front (a non-streaming upstream answer), folded in this
 * turn: the non-streaming path pays no promise for it. */
function collectSyncOrAbort(ctx: HttpContext, s: StartedChat, events: SyncEvents): ChatResult | null {
  try {
    return collectSync(events);
  } catch (e) {
    return abortedOrThrow(ctx, s, e);
  }
}

function abortedOrThrow(ctx: HttpContext, s: StartedChat, e: unknown): null {
  if (!isAbortError(e, s.cancel)) throw e;
  dropResponse(ctx);
  return null;
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
  if (s.start.cache) setOwnHeader(ctx, "x-svc-cache", s.start.cache);
  if (!a.stream) {
    const events = s.start.events;
    const result = isSyncEvents(events) ? collectSyncOrAbort(ctx, s, events) : await collectOrAbort(ctx, s);
    if (!result) return;
    setHeaders(ctx, rateHeaders(s.start.rate));
    const body = a.whole(result, a.meta);
    // an upstream body passed through is JSON text already
    if (result.upstream !== undefined && typeof body === "string") setOwnHeader(ctx, "content-type", "application/json; charset=utf-8");
    ctx.body = body;
    return;
  }
  await streamEvents(ctx, {
    format: a.format,
    headers: rateHeaders(s.start.rate),
    events: s.start.events,
    render: (events) => a.render(events, a.meta),
    onError: a.onError,
    log: a.log,
  });
}
