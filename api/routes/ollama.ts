// Ollama-compatible routes: /api/chat, /api/generate (NDJSON streams, stream defaults to true),
// /api/embed (+ legacy /api/embeddings), /api/tags and /v1/tags, /api/show, /api/version.
// Errors are {error: "message"} with the status; an unknown model is 404 "model 'x' not found".
import Router from "@koa/router";
import type { Context, Next } from "koa";
import type { HttpContext } from "../http-context";
import type { InferenceRoute } from "../inference-route";
import { readFileSync } from "node:fs";
import type { Svc } from "../../engines/svc";
import { SvcError, invalidRequest } from "../../engines/errors";
import type { ModelListing } from "../../engines/gateway/pipeline-types";
import type { ModelInfo } from "../../engines/inference/info";
import type { ChatEvent, ChatRequest } from "../../engines/chat/types";
import type { ChatResult } from "../../engines/chat/collect";
import { rateHeaders, toSvcError } from "../errors";
import { jsonBody } from "../body-schema";
import { OllamaChatBody, OllamaEmbedBody, OllamaEmbeddingsBody, OllamaGenerateBody, ShowBody } from "../../schemas/api/bodies";
import { withCacheHeader } from "../cache-headers";
import { agentIdOf, answerChat, authenticateCaller, callerFrom, pipelineOf, setHeaders, startChat } from "../caller";
import { frames, ndjsonLine } from "../sse";
import { isLoadOnlyChat, keepAliveZero, parseOllamaChat, parseOllamaEmbed, parseOllamaGenerate } from "../ollama/request";
import { chatLoadResponse, chatResponse, generateResponse, loadResponse, timed, type Timing } from "../ollama/response";
import { chatLines, generateLines } from "../ollama/stream";
import { ollamaErrorMessage, renderOllama } from "../ollama/errors";
import { showRemote, showResponse, tagEntry } from "../ollama/models";

async function ollamaShape(ctx: Context, next: Next) {
  ctx.state.renderError = renderOllama;
  await next();
}


const SVC_VERSION: string = (() => {
  try {
    return JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")).version ?? "0.0.0";
  } catch {
    return "0.0.0";
  }
})();

/** Model lookup and answering, shared by the inference routes and the Koa routes. */
function ollamaParts(svc: Svc) {
  const log = (msg: string, fields?: Record<string, unknown>) => svc.log.warn(msg, fields);
  const streamError = (ctx: HttpContext) => (e: unknown) => ndjsonLine({ error: ollamaErrorMessage(ctx, toSvcError(e)) });

  /** Local GGUF metadata for a listed model, when the pool serves it. */
  async function localInfo(m: ModelListing): Promise<ModelInfo | undefined> {
    const pool = svc.engines.pool;
    if (m.providerType !== "local" || !pool?.has(m.id)) return undefined;
    return pool.info(m.id).catch(() => undefined);
  }

  /** The listed model a name refers to (Ollama clients may append ":latest"). */
  async function findModel(ctx: HttpContext, name: string): Promise<ModelListing> {
    const models = await pipelineOf(svc).listModels(callerFrom(ctx));
    const m = models.find((x) => x.id === name) ?? models.find((x) => x.id === name.replace(/:latest$/, ""));
    if (m) return m;
    const alias = svc.engines.pool?.resolveName(name);
    const viaAlias = alias ? models.find((x) => x.id === alias) : undefined;
    if (viaAlias) return viaAlias;
    throw new SvcError("not_found", "model_not_found", `model '${name}' not found`, "model");
  }

  /** Run a parsed chat/generate request: one JSON answer, or NDJSON lines while it streams. */
  async function answer(
    ctx: HttpContext,
    req: ChatRequest,
    t: Timing,
    whole: (r: ChatResult, model: string, t: Timing) => unknown,
    lines: (events: AsyncIterable<ChatEvent>, model: string, t: Timing) => AsyncIterable<Record<string, unknown>>,
  ) {
    const s = await startChat(ctx, svc, req);
    if (!s) return; // client gone
    // a whole answer reports its timings, so the fold is timed
    const started = req.stream ? s : { ...s, start: { ...s.start, events: timed(s.start.events, t) } };
    await answerChat(ctx, started, {
      stream: req.stream,
      meta: { model: req.model, t },
      whole: (result, m) => whole(result, m.model, m.t),
      format: "ndjson",
      render: (events, m) => frames(lines(events, m.model, m.t), ndjsonLine),
      onError: streamError(ctx),
      log,
    });
  }

  /** keep_alive 0: unload a local model (after in-flight answers, this one included, end). */
  function unloadLocal(name: string): void {
    const pool = svc.engines.pool;
    if (pool?.has(name) && pool.unload(name)) svc.log.info(`model ${name} unloaded (keep_alive 0)`);
  }

  /** A load-only request (no messages / empty prompt): Ollama answers "load" once the model is
   * in memory, and clients send it to warm a model up; answering without loading left the first
   * real request to pay for the load. The pool has no public load(); counting the tokens of ""
   * loads the model if needed (and arms its idle unload as any load does). */
  async function loadLocal(name: string): Promise<void> {
    const pool = svc.engines.pool;
    if (pool?.has(name)) await pool.countTokens(name, "");
  }

  return { localInfo, findModel, answer, unloadLocal, loadLocal };
}

// each body is checked against its schema (types, ranges), then mapped by api/ollama/request.ts
const readChat = jsonBody("post", "/api/chat", OllamaChatBody);
const readGenerate = jsonBody("post", "/api/generate", OllamaGenerateBody);
const readEmbed = jsonBody("post", "/api/embed", OllamaEmbedBody);
const readEmbeddings = jsonBody("post", "/api/embeddings", OllamaEmbeddingsBody);
const readShow = jsonBody("post", "/api/show", ShowBody);

/** The POST inference routes (served by api/inference-listener.ts). */
export function ollamaInference(svc: Svc): InferenceRoute[] {
  const { findModel, answer, unloadLocal, loadLocal } = ollamaParts(svc);
  const r: InferenceRoute[] = [];
  const post = (path: string, handle: (ctx: HttpContext) => Promise<void>) => r.push({ path, renderError: renderOllama, handle });

  // As Ollama: no messages / empty prompt only loads the model ("load"), or with keep_alive 0
  // unloads it ("unload"); a generation with keep_alive 0 answers, then unloads the model.
  post("/api/chat", async (ctx) => {
    const t: Timing = { startNs: process.hrtime.bigint() };
    const b = await readChat(ctx);
    const unload = keepAliveZero(b.keep_alive);
    if (isLoadOnlyChat(b)) {
      const m = await findModel(ctx, typeof b.model === "string" ? b.model : parseOllamaChat(b).model);
      if (unload) unloadLocal(m.id);
      else await loadLocal(m.id);
      ctx.body = chatLoadResponse(b.model, unload ? "unload" : "load");
      return;
    }
    const req = parseOllamaChat(b, agentIdOf(ctx));
    try {
      await answer(ctx, req, t, chatResponse, chatLines);
    } finally {
      if (unload) unloadLocal(req.model);
    }
  });

  post("/api/generate", async (ctx) => {
    const t: Timing = { startNs: process.hrtime.bigint() };
    const b = await readGenerate(ctx);
    const unload = keepAliveZero(b.keep_alive);
    const { req, loadOnly } = parseOllamaGenerate(b, agentIdOf(ctx));
    if (loadOnly) {
      const m = await findModel(ctx, req.model);
      if (unload) unloadLocal(m.id);
      else await loadLocal(m.id);
      ctx.body = loadResponse(req.model, unload ? "unload" : "load");
      return;
    }
    try {
      await answer(ctx, req, t, generateResponse, generateLines);
    } finally {
      if (unload) unloadLocal(req.model);
    }
  });

  post("/api/embed", async (ctx) => {
    const started = process.hrtime.bigint();
    const b = await readEmbed(ctx);
    // keep_alive is part of /api/embed as it is of /api/chat and /api/generate (its body schema says
    // "0 unloads the model after answering"): checked and honoured here too, not ignored
    const unload = keepAliveZero(b.keep_alive);
    const req = parseOllamaEmbed(b);
    try {
      const out = await pipelineOf(svc).embed(callerFrom(ctx), req);
      setHeaders(ctx, withCacheHeader(rateHeaders(out.rate), out.cache));
      ctx.body = {
        model: req.model,
        embeddings: out.vectors,
        total_duration: Number(process.hrtime.bigint() - started),
        load_duration: 0,
        prompt_eval_count: out.promptTokens,
      };
    } finally {
      if (unload) unloadLocal(req.model);
    }
  });

  post("/api/embeddings", async (ctx) => {
    const req = parseOllamaEmbed(await readEmbeddings(ctx), true);
    const out = await pipelineOf(svc).embed(callerFrom(ctx), req);
    setHeaders(ctx, withCacheHeader(rateHeaders(out.rate), out.cache));
    ctx.body = { embedding: out.vectors[0] ?? [] };
  });

  return r;
}

/** Model listing and details (served by Koa). */
export default function ollamaRoutes(svc: Svc): Router {
  const r = new Router();
  const { localInfo, findModel } = ollamaParts(svc);

  const tags = async (ctx: Context) => {
    const models = await pipelineOf(svc).listModels(callerFrom(ctx));
    ctx.body = { models: await Promise.all(models.map(async (m) => tagEntry(m, await localInfo(m)))) };
  };
  r.get("/api/tags", ollamaShape, tags);
  r.get("/v1/tags", ollamaShape, tags);

  r.post("/api/show", ollamaShape, async (ctx: Context) => {
    authenticateCaller(ctx, svc); // the key before the body: a bad key with a bad body is a 401
    const b = await readShow(ctx);
    const name = typeof b.model === "string" && b.model ? b.model : typeof b.name === "string" && b.name ? b.name : undefined;
    if (!name) throw invalidRequest("'model' is required", "model");
    const m = await findModel(ctx, name);
    const info = await localInfo(m);
    const pool = svc.engines.pool;
    const spec = pool?.list().find((x) => x.name === m.id)?.spec;
    ctx.body = info ? showResponse(info, spec) : showRemote(m);
  });

  // loaded models (Ollama's `ollama ps`): what the pool holds in memory right now
  r.get("/api/ps", ollamaShape, async (ctx: Context) => {
    const visible = new Map((await pipelineOf(svc).listModels(callerFrom(ctx))).map((m) => [m.id, m]));
    const pool = svc.engines.pool;
    const out = [];
    for (const s of pool?.stats().models ?? []) {
      const m = visible.get(s.name);
      if (!m) continue;
      const entry = await tagEntry(m, await localInfo(m));
      out.push({ ...entry, expires_at: s.idleUnloadAt ?? null, size_vram: 0, active_leases: s.activeLeases });
    }
    ctx.body = { models: out };
  });

  r.get("/api/version", ollamaShape, (ctx: Context) => {
    ctx.body = { version: SVC_VERSION };
  });

  // Any other /api/* path answers in Ollama's error shape, which Ollama clients print (the
  // default {error: {message}} shape shows as "[object Object]" in ollama-js). Last in this
  // router; the inference routes (POST /api/chat, …) never reach Koa.
  r.all(/^\/api\/.*/, ollamaShape, (ctx: Context) => {
    throw new SvcError("not_found", "not_found", `${ctx.method} ${ctx.path} is not an endpoint of this server (Ollama-compatible routes: /api/chat, /api/generate, /api/embed, /api/tags, /api/show, /api/ps, /api/version)`);
  });

  return r;
}
