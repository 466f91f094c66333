// Gateway test fixtures: a loopback stand-in for a cloud provider (OpenAI chat completions,
// JSON and SSE with usage; Anthropic messages), a real svc on an ephemeral port, helpers to
// apply Provider/AccessPolicy objects and make keys through the HTTP routes.
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { readFileSync } from "node:fs";
import path from "node:path";
import OpenAI from "openai";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";
import type { Gateway } from "../../engines/gateway";

export type Mode = "ok" | "fail500" | "fail401" | "fail400" | "rate429" | "hang" | "midstream" | "truncated" | "close";

export interface UpstreamRequest {
  path: string;
  headers: IncomingHttpHeaders;
  body: any;
}

/**
 * A stand-in provider. Answers "echo: <last user message>" with usage prompt_tokens=P
 * (default 10) and completion_tokens=C (default 5). `mode` (or a model named "mode:<mode>")
 * makes it fail in a chosen way.
 */
export async function standIn(opts: { name?: string; promptTokens?: number; completionTokens?: number } = {}) {
  const requests: UpstreamRequest[] = [];
  let mode: Mode = "ok";
  const P = opts.promptTokens ?? 10;
  const C = opts.completionTokens ?? 5;
  const hanging = new Set<import("node:http").ServerResponse>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      let body: any = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        /* empty */
      }
      requests.push({ path: req.url ?? "", headers: req.headers, body });
      const m: Mode = typeof body.model === "string" && body.model.startsWith("mode:") ? (body.model.slice(5) as Mode) : mode;
      if (m === "fail500") return json(res, 500, { error: { message: "upstream exploded" } });
      if (m === "fail401") return json(res, 401, { error: { message: "bad credential" } });
      if (m === "fail400") return json(res, 400, { error: { message: "max_tokens is too large" } });
      if (m === "rate429") {
        res.setHeader("retry-after", "7");
        return json(res, 429, { error: { message: "slow down" } });
      }
      if (m === "hang") {
        hanging.add(res);
        res.on("close", () => hanging.delete(res));
        return;
      }
      if (m === "close") {
        req.socket.destroy();
        return;
      }
      if (req.url?.endsWith("/embeddings")) {
        const input: string[] = Array.isArray(body.input) ? body.input : [body.input];
        return json(res, 200, {
          object: "list",
          model: body.model,
          data: input.map((t, index) => ({ object: "embedding", index, embedding: [t.length, 0.5, -0.5] })),
          usage: { prompt_tokens: input.length * 3, total_tokens: input.length * 3 },
        });
      }
      const last = [...(body.messages ?? [])].reverse().find((x: any) => x.role === "user");
      const content = typeof last?.content === "string" ? last.content : Array.isArray(last?.content) ? last.content.map((b: any) => b.text ?? "").join("") : "";
      const text = `echo: ${content}`;
      if (req.url?.endsWith("/messages")) return anthropic(res, body, text, P, C);
      if (!body.stream) {
        return json(res, 200, {
          id: "chatcmpl-standin",
          object: "chat.completion",
          created: 1,
          model: body.model,
          choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
          usage: { prompt_tokens: P, completion_tokens: C, total_tokens: P + C },
        });
      }
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      const base = { id: "chatcmpl-standin", object: "chat.completion.chunk", created: 1, model: body.model };
      res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] })}\n\n`);
      const words = text.split(/(?<= )/);
      for (const w of words) res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: w }, finish_reason: null }] })}\n\n`);
      if (m === "midstream") {
        // the chunks above reach the client, then the connection breaks
        setTimeout(() => res.destroy(), 30);
        return;
      }
      // the chunks above, then a clean end: no finish_reason, no [DONE] (a proxy or server that
      // gave up on the answer and closed the response properly)
      if (m === "truncated") return void res.end();
      res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] })}\n\n`);
      if (body.stream_options?.include_usage) {
        res.write(`data: ${JSON.stringify({ ...base, choices: [], usage: { prompt_tokens: P, completion_tokens: C, total_tokens: P + C } })}\n\n`);
      }
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    requests,
    port,
    baseUrl: `http://127.0.0.1:${port}/v1`,
    setMode(m: Mode) {
      mode = m;
    },
    /** requests held open by mode "hang" and not yet closed by the caller */
    get hanging() {
      return hanging.size;
    },
    async close() {
      for (const r of hanging) r.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

function json(res: import("node:http").ServerResponse, status: number, body: unknown) {
  const s = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(s) });
  res.end(s);
}

function anthropic(res: import("node:http").ServerResponse, body: any, text: string, P: number, C: number) {
  if (!body.stream) {
    return json(res, 200, {
      id: "msg_standin",
      type: "message",
      role: "assistant",
      model: body.model,
      content: [{ type: "text", text }],
      stop_reason: "end_turn",
      usage: { input_tokens: P, output_tokens: C },
    });
  }
  res.writeHead(200, { "content-type": "text/event-stream" });
  const ev = (type: string, data: unknown) => res.write(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
  ev("message_start", { type: "message_start", message: { id: "msg_standin", usage: { input_tokens: P, output_tokens: 1 } } });
  ev("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } });
  for (const w of text.split(/(?<= )/)) ev("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: w } });
  ev("content_block_stop", { type: "content_block_stop", index: 0 });
  ev("message_delta", { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: C } });
  ev("message_stop", { type: "message_stop" });
  res.end();
}

export type StandIn = Awaited<ReturnType<typeof standIn>>;

export interface Env {
  svc: TestSvc;
  gw: Gateway;
  url: string;
  adminKey: string;
  home: string;
  /** apply objects as the "test" source (owner config:test) */
  apply(objs: Array<{ kind: string; name: string; spec: unknown }>): Promise<void>;
  /** POST /v1/api-keys with the admin key (or `as`); returns {status, json} */
  createKey(body: Record<string, unknown>, as?: string): Promise<{ status: number; json: any }>;
  /** a usable key's secret (throws when creation fails) */
  key(body?: Record<string, unknown>): Promise<{ id: string; secret: string }>;
  client(apiKey: string, opts?: { maxRetries?: number }): OpenAI;
  api(method: string, p: string, body?: unknown, key?: string): Promise<{ status: number; json: any; headers: Headers }>;
  stop(): Promise<void>;
}

export async function startEnv(opts: { home?: string } = {}): Promise<Env> {
  const home = opts.home ?? (await tempDir("svc-gw-"));
  const svc = await startTestSvc({ home, resyncMs: 0 });
  const gw = svc.svc.engines.gateway!;
  if (!gw) throw new Error("gateway did not start: " + JSON.stringify(svc.logs.filter((l) => l.level !== "info")));
  const adminKey = readFileSync(path.join(home, "admin.key"), "utf8").trim();
  const url = svc.url;
  const api = async (method: string, p: string, body?: unknown, key = adminKey) => {
    const res = await fetch(url + p, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      json = text;
    }
    return { status: res.status, json, headers: res.headers };
  };
  const env: Env = {
    svc,
    gw,
    url,
    adminKey,
    home,
    async apply(objs) {
      await svc.svc.store.write(objs.map((o) => ({ op: "upsert" as const, kind: o.kind, name: o.name, owner: "config:test", spec: o.spec })));
    },
    async createKey(body, as = adminKey) {
      const r = await api("POST", "/v1/api-keys", body, as);
      return { status: r.status, json: r.json };
    },
    async key(body = {}) {
      const r = await api("POST", "/v1/api-keys", { name: "test key", ...body });
      if (r.status !== 201) throw new Error(`create key failed: ${r.status} ${JSON.stringify(r.json)}`);
      return { id: r.json.id, secret: r.json.api_key };
    },
    client(apiKey, o = {}) {
      return new OpenAI({ apiKey, baseURL: `${url}/v1`, maxRetries: o.maxRetries ?? 0, timeout: 20_000 });
    },
    api,
    stop: () => svc.stop(),
  };
  return env;
}

/** A Provider object pointing at a stand-in. */
export function provider(name: string, up: StandIn, models: Array<{ name: string; inputPerMillion?: number; outputPerMillion?: number; upstreamName?: string }>, extra: Record<string, unknown> = {}) {
  return { kind: "Provider", name, spec: { type: "openai", baseUrl: up.baseUrl, timeoutSeconds: 5, models, ...extra } };
}

/** Expect an OpenAI SDK error with status and code. */
export async function expectError(p: Promise<unknown>, status: number, code: string): Promise<any> {
  try {
    await p;
  } catch (e: any) {
    if (e?.status !== status || e?.code !== code) {
      throw new Error(`expected ${status} ${code}, got ${e?.status} ${e?.code}: ${e?.message}`);
    }
    return e;
  }
  throw new Error(`expected ${status} ${code}, but the request succeeded`);
}
