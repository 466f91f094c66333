// OpenAI-compatible routes: /v1/chat/completions, /v1/completions, /v1/responses,
// /v1/embeddings, /v1/models. Thin: parse (api/openai/*-request), send through the gateway
// pipeline, shape the answer (api/openai/*-response, *-stream). Errors use the default OpenAI
// renderer {error: {message, type, code, param}}.
import Router from "@koa/router";
import type { Context } from "koa";
import type { HttpContext } from "../http-context";
import type { InferenceRoute } from "../inference-route";
import type { ChatEvent } from "../../engines/chat/types";
import type { ChatResult } from "../../engines/chat/collect";
import type { Svc } from "../../engines/svc";
import { modelNotFound } from "../../engines/errors";
import { openAIBody, rateHeaders, toSvcError } from "../errors";
import { jsonBody } from "../body-schema";
import { ChatCompletionBody, CompletionBody, EmbeddingsBody, ResponsesBody } from "../../schemas/api/bodies";
import { withCacheHeader } from "../cache-headers";
import { agentIdOf, answerChat, callerFrom, pipelineOf, setHeaders, startChat } from "../caller";
import { frames, sseData } from "../sse";
import { parseChatRequest } from "../openai/chat-request";
import { chatCompletion } from "../openai/chat-response";
import { chatChunks } from "../openai/chat-stream";
import { completionChunks, parseCompletionRequest, textCompletion } from "../openai/completions";
import { parseResponsesRequest } from "../openai/responses-request";
import { responseFromResult } from "../openai/responses-response";
import { responseEvents } from "../openai/responses-stream";
import { embeddingsResponse, parseEmbeddingsRequest } from "../openai/embeddings";
import { modelList, modelObject } from "../openai/models";
import { newId } from "../openai/validate";

const now = () => Math.floor(Date.now() / 1000);
// each body is checked against its schema (types, ranges), then mapped by its transform
const readChat = jsonBody("post", "/v1/chat/completions", ChatCompletionBody);
const readCompletion = jsonBody("post", "/v1/completions", CompletionBody);
const readResponses = jsonBody("post", "/v1/responses", ResponsesBody);
const readEmbeddings = jsonBody("post", "/v1/embeddings", EmbeddingsBody);
const DONE = "data: [DONE]\n\n";
// an error after the stream began (upstream failure, server stopping), then the end marker
const sseError = (e: unknown) => sseData(openAIBody(toSvcError(e))) + DONE;

type ChatMeta = { id: string; created: number; model: string; includeUsage: boolean };
/** The upstream's chat.completion unchanged when it names the served model and is already in
 * svc's form (docs/gate.md, "The answer's body"); else svc's own body from the folded events. */
const wholeChat = (r: ChatResult, meta: ChatMeta) => (r.upstream !== undefined && r.upstream.model === meta.model ? r.upstream.text : chatCompletion(r, meta));
const renderChat = (events: AsyncIterable<ChatEvent>, meta: ChatMeta) => frames(chatChunks(events, meta), sseData, DONE);
type CompletionMeta = { id: string; created: number; model: string; prefix: string; includeUsage: boolean };
const renderCompletion = (events: AsyncIterable<ChatEvent>, meta: CompletionMeta) => frames(completionChunks(events, meta), sseData, DONE);

/** The POST inference routes (served by api/inference-listener.ts). */
export function openaiInference(svc: Svc): InferenceRoute[] {
  const log = (msg: string, fields?: Record<string, unknown>) => svc.log.warn(msg, fields);
  const r: InferenceRoute[] = [];
  const post = (path: string, handle: (ctx: HttpContext) => Promise<void>) => r.push({ path, handle });

  post("/v1/chat/completions", async (ctx) => {
    const { req, includeUsage } = parseChatRequest(await readChat(ctx), agentIdOf(ctx));
    const s = await startChat(ctx, svc, req);
    if (!s) return; // client gone
    const meta: ChatMeta = { id: newId("chatcmpl-"), created: now(), model: s.start.model, includeUsage };
    await answerChat(ctx, s, { stream: req.stream, meta, whole: wholeChat, format: "sse", render: renderChat, onError: sseError, log });
  });

  post("/v1/completions", async (ctx) => {
    const { req, includeUsage, echo } = parseCompletionRequest(await readCompletion(ctx), agentIdOf(ctx));
    const s = await startChat(ctx, svc, req);
    if (!s) return; // client gone
    const meta: CompletionMeta = { id: newId("cmpl-"), created: now(), model: s.start.model, prefix: echo ? (req.prompt ?? "") : "", includeUsage };
    await answerChat(ctx, s, { stream: req.stream, meta, whole: textCompletion, format: "sse", render: renderCompletion, onError: sseError, log });
  });

  post("/v1/responses", async (ctx) => {
    const { req, echo } = parseResponsesRequest(await readResponses(ctx), agentIdOf(ctx));
    const s = await startChat(ctx, svc, req);
    if (!s) return; // client gone
    const meta = { id: newId("resp_"), createdAt: now(), model: s.start.model, echo };
    let seq = 1_000_000; // error events after the stream began continue the sequence loosely
    await answerChat(ctx, s, {
      stream: req.stream,
      meta,
      whole: responseFromResult,
      format: "sse",
      render: (events, m) => frames(responseEvents(events, m), (ev) => `event: ${ev.type}\ndata: ${JSON.stringify(ev)}\n\n`),
      onError: (e) => {
        const err = toSvcError(e);
        return `event: error\ndata: ${JSON.stringify({ type: "error", code: err.code, message: err.message, param: err.param, sequence_number: seq++ })}\n\n`;
      },
      log,
    });
  });

  post("/v1/embeddings", async (ctx) => {
    const { req, format } = parseEmbeddingsRequest(await readEmbeddings(ctx));
    const out = await pipelineOf(svc).embed(callerFrom(ctx), req);
    setHeaders(ctx, withCacheHeader(rateHeaders(out.rate), out.cache));
    ctx.body = embeddingsResponse(out, out.model, format);
  });

  return r;
}

/** Model listing (GET routes, served by Koa). */
export default function openaiRoutes(svc: Svc): Router {
  const r = new Router();

  r.get("/v1/models", async (ctx: Context) => {
    ctx.body = modelList(await pipelineOf(svc).listModels(callerFrom(ctx)));
  });

  r.get("/v1/models/:id", async (ctx: Context) => {
    const id = ctx.params.id;
    const m = (await pipelineOf(svc).listModels(callerFrom(ctx))).find((x) => x.id === id);
    if (!m) throw modelNotFound(id);
    ctx.body = modelObject(m);
  });

  return r;
}
