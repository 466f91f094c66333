// Every keyed route of the route table (api/openapi/catalogue.ts, access "key") meets the gate
// the way its table entry says (`gate`): a "call" route refuses an over-limit key and a
// policy-denied key exactly as chat does (same status, same code); every keyed route, "call" or
// "read", refuses a revoked key (401) and a key used from outside its IP allowlist (403). The
// requests come from SAMPLES below, and a keyed route without a sample fails this test, so a new
// route cannot be added without being shown to meet the gate.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import Router from "@koa/router";
import { routeDocs, type RouteDoc } from "../../api/openapi/catalogue";
import { createHandler } from "../../api/app";
import { startEnv, standIn, provider, type Env, type StandIn } from "./fixtures";
import { mediaStandin } from "../media/standin";

interface Sample {
  method: string;
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** the route is reached through a console session: sign in with the key first */
  session?: true;
  /** the route is reached inside an MCP session: initialize, then this JSON-RPC request */
  mcp?: unknown;
}

const chatBody = { model: "gpt-x", messages: [{ role: "user", content: "hi" }] };
const ids = { task: "task_doesnotexist00000000", job: "vid_doesnotexist0000" };

/** One request per keyed route ("METHOD path" as the table writes it). */
const SAMPLES: Record<string, Sample> = {
  "GET /v1/models": { method: "GET", path: "/v1/models" },
  "GET /v1/models/:id": { method: "GET", path: "/v1/models/gpt-x" },
  "POST /v1/chat/completions": { method: "POST", path: "/v1/chat/completions", body: chatBody },
  "POST /v1/completions": { method: "POST", path: "/v1/completions", body: { model: "gpt-x", prompt: "hi" } },
  "POST /v1/responses": { method: "POST", path: "/v1/responses", body: { model: "gpt-x", input: "hi" } },
  "POST /v1/embeddings": { method: "POST", path: "/v1/embeddings", body: { model: "gpt-x", input: "hi" } },
  "POST /v1/messages": { method: "POST", path: "/v1/messages", body: { ...chatBody, max_tokens: 8 } },
  "POST /v1/messages/count_tokens": { method: "POST", path: "/v1/messages/count_tokens", body: chatBody },
  "POST /api/chat": { method: "POST", path: "/api/chat", body: { ...chatBody, stream: false } },
  "POST /api/generate": { method: "POST", path: "/api/generate", body: { model: "gpt-x", prompt: "hi", stream: false } },
  "POST /api/embed": { method: "POST", path: "/api/embed", body: { model: "gpt-x", input: "hi" } },
  "POST /api/embeddings": { method: "POST", path: "/api/embeddings", body: { model: "gpt-x", prompt: "hi" } },
  "POST /api/show": { method: "POST", path: "/api/show", body: { model: "gpt-x" } },
  "GET /api/tags": { method: "GET", path: "/api/tags" },
  "GET /v1/tags": { method: "GET", path: "/v1/tags" },
  "GET /api/ps": { method: "GET", path: "/api/ps" },
  "POST /v1/api-keys": { method: "POST", path: "/v1/api-keys", body: { name: "made by a key" } },
  "GET /v1/api-keys": { method: "GET", path: "/v1/api-keys" },
  "GET /v1/api-keys/:id": { method: "GET", path: "/v1/api-keys/SELF" },
  "PATCH /v1/api-keys/:id": { method: "PATCH", path: "/v1/api-keys/SELF", body: { name: "renamed" } },
  "DELETE /v1/api-keys/:id": { method: "DELETE", path: "/v1/api-keys/key_doesnotexist000000" },
  "POST /v1/api-keys/temporary": { method: "POST", path: "/v1/api-keys/temporary", body: { expires_in: 60 } },
  "GET /v1/audit-logs": { method: "GET", path: "/v1/audit-logs" },
  "GET /v1/usage": { method: "GET", path: "/v1/usage" },
  "GET /console/session": { method: "GET", path: "/console/session", session: true },
  "DELETE /console/session": { method: "DELETE", path: "/console/session", session: true },
  "GET /agents": { method: "GET", path: "/agents" },
  "POST /agents/:id/run": { method: "POST", path: "/agents/helper/run", body: { prompt: "hi" } },
  "POST /agents/:id/dispatch": { method: "POST", path: "/agents/helper/dispatch", body: { prompt: "hi" } },
  "GET /tasks": { method: "GET", path: "/tasks" },
  "GET /tasks/:id": { method: "GET", path: `/tasks/${ids.task}` },
  "DELETE /tasks/:id": { method: "DELETE", path: `/tasks/${ids.task}` },
  "POST /tasks/:id/clarify": { method: "POST", path: `/tasks/${ids.task}/clarify`, body: { response: "yes" } },
  "GET /mcp/health": { method: "GET", path: "/mcp/health" },
  "GET /mcp/tools": { method: "GET", path: "/mcp/tools" },
  "POST /mcp/call": { method: "POST", path: "/mcp/call", body: { name: "svc_time", arguments: {} } },
  "ALL /mcp": { method: "POST", path: "/mcp", mcp: { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "svc_time", arguments: {} } } },
  "POST /memory/ingest": { method: "POST", path: "/memory/ingest", body: { agent_id: "helper", conversation_id: "c1", turns: [{ user: "hi", assistant: "hello" }] } },
  "POST /memory/flush": { method: "POST", path: "/memory/flush", body: { agent_id: "helper" } },
  "GET /memory/search": { method: "GET", path: "/memory/search?agent_id=helper&q=hi" },
  "GET /memory/recall": { method: "GET", path: "/memory/recall?agent_id=helper&q=hi" },
  "GET /memory/status": { method: "GET", path: "/memory/status" },
  "GET /memory/runs": { method: "GET", path: "/memory/runs" },
  "GET /memory/dead-letters": { method: "GET", path: "/memory/dead-letters" },
  "POST /memory/dead-letters/:id/retry": { method: "POST", path: "/memory/dead-letters/dl_missing/retry" },
  "POST /memory/consolidate": { method: "POST", path: "/memory/consolidate", body: { agent_id: "helper" } },
  "DELETE /memory/agents/:id": { method: "DELETE", path: "/memory/agents/nobody" },
  "DELETE /memory/agents/:id/index": { method: "DELETE", path: "/memory/agents/nobody/index" },
  "POST /memory/agents/:id/index/rebuild": { method: "POST", path: "/memory/agents/nobody/index/rebuild" },
  "POST /v1/audio/transcriptions": { method: "POST", path: "/v1/audio/transcriptions", body: { model: "whisper", file: "aGk=" } },
  "GET /v1/images/models": { method: "GET", path: "/v1/images/models" },
  "POST /v1/images/generations": { method: "POST", path: "/v1/images/generations", body: { model: "img", prompt: "a cat" } },
  "POST /v1/images/edits": { method: "POST", path: "/v1/images/edits", body: { model: "img", prompt: "a cat" } },
  "POST /v1/images/upscale": { method: "POST", path: "/v1/images/upscale", body: { model: "img" } },
  "POST /v1/images/cancel": { method: "POST", path: "/v1/images/cancel", body: { id: "job-missing-1" } },
  "POST /v1/videos/quote": { method: "POST", path: "/v1/videos/quote", body: { model: "vid", prompt: "waves" } },
  "POST /v1/videos/generations": { method: "POST", path: "/v1/videos/generations", body: { model: "vid", prompt: "waves", quote_id: "vq_missing", consent: true } },
  "GET /v1/videos/jobs/:id": { method: "GET", path: `/v1/videos/jobs/${ids.job}` },
  "GET /v1/videos/jobs/:id/content": { method: "GET", path: `/v1/videos/jobs/${ids.job}/content` },
  "GET /credits/balance": { method: "GET", path: "/credits/balance" },
  "POST /pair/unpair": { method: "POST", path: "/pair/unpair", body: { device_id: "dev_missing" } },
  "POST /secure/session": { method: "POST", path: "/secure/session", body: {} },
};

const keyed = routeDocs.filter((d) => d.access === "key");
const name = (d: RouteDoc) => `${d.method.toUpperCase()} ${d.path}`;

interface Answer {
  status: number;
  code?: string;
}

describe("every keyed route meets the gate", () => {
  let env: Env;
  let up: StandIn;
  let media: Awaited<ReturnType<typeof mediaStandin>>;

  beforeAll(async () => {
    env = await startEnv();
    up = await standIn();
    media = await mediaStandin("every-route-cred");
    process.env.SVC_TEST_EVERY_ROUTE_CRED = "every-route-cred";
    await env.apply([
      provider("chat-up", up, [{ name: "gpt-x", inputPerMillion: 1, outputPerMillion: 1 }]),
      {
        kind: "Provider",
        name: "media-up",
        spec: {
          type: "openai",
          baseUrl: media.baseUrl,
          credential: "env:SVC_TEST_EVERY_ROUTE_CRED",
          capabilities: ["image_generation", "image_edit", "image_upscale", "transcription", "video", "credits"],
          models: [{ name: "img", perImage: 0.01 }, { name: "whisper", perAudioMinute: 0.01 }, { name: "vid", perVideoSecond: 0.01 }],
        },
      },
      { kind: "Agent", name: "helper", spec: { instructions: "You help.", defaultModel: "gpt-x" } },
    ]);
  }, 60_000);
  afterAll(async () => {
    await env?.stop();
    await up?.close();
    await media?.close();
    delete process.env.SVC_TEST_EVERY_ROUTE_CRED;
  });

  const MCP_ACCEPT = { accept: "application/json, text/event-stream" };

  async function request(key: { id: string; secret: string }, method: string, p: string, body: unknown, headers: Record<string, string> = {}): Promise<{ res: Response; text: string }> {
    const res = await fetch(env.url + p.replace("SELF", key.id), {
      method,
      headers: { ...(key.secret ? { authorization: `Bearer ${key.secret}` } : {}), ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { res, text: await res.text() };
  }

  /** The answer the route gives this key: status, and the error's code (OpenAI shape), type
   * (Anthropic) or message (Ollama). */
  async function send(d: RouteDoc, key: { id: string; secret: string }): Promise<Answer> {
    const s = SAMPLES[name(d)];
    let r: { res: Response; text: string };
    if (s.session) {
      // a console session stands for a key: signing in is where the gate judges it
      const signIn = await request(key, "POST", "/console/session", { api_key: key.secret });
      if (signIn.res.status !== 200) r = signIn;
      else {
        const cookie = signIn.res.headers.get("set-cookie")!.split(";")[0];
        const res = await fetch(env.url + s.path, { method: s.method, headers: { cookie } });
        r = { res, text: await res.text() };
      }
    } else if (s.mcp) {
      const init = await request(key, "POST", "/mcp", { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "every-route", version: "1" } } }, MCP_ACCEPT);
      const sid = init.res.headers.get("mcp-session-id");
      if (init.res.status !== 200 || !sid) r = init;
      else {
        await request(key, "POST", "/mcp", { jsonrpc: "2.0", method: "notifications/initialized" }, { ...MCP_ACCEPT, "mcp-session-id": sid });
        r = await request(key, "POST", "/mcp", s.mcp, { ...MCP_ACCEPT, "mcp-session-id": sid });
      }
    } else r = await request(key, s.method, s.path, s.body, s.headers);
    let code: string | undefined;
    try {
      const j = JSON.parse(r.text);
      code = j?.error?.code ?? j?.error?.type ?? (typeof j?.error === "string" ? j.error : undefined);
    } catch {
      code = undefined;
    }
    return { status: r.res.status, code };
  }

  it("every keyed route has a sample and says how it meets the gate", () => {
    expect(keyed.filter((d) => !SAMPLES[name(d)]).map(name)).toEqual([]);
    expect(keyed.filter((d) => d.gate === undefined).map(name)).toEqual([]);
    expect(Object.keys(SAMPLES).filter((k) => !keyed.some((d) => name(d) === k))).toEqual([]);
  });

  it("a revoked key is refused 401 and a key from outside its IP allowlist 403, on every keyed route", async () => {
    const revoked = await env.key({ name: "revoked" });
    expect((await env.api("DELETE", `/v1/api-keys/${revoked.id}`)).status).toBeLessThan(300);
    const fenced = await env.key({ ip_allowlist: { enabled: true, addresses: ["192.0.2.0/24"] } });
    const wrong: string[] = [];
    for (const d of keyed) {
      const r = await send(d, revoked);
      const f = await send(d, fenced);
      if (r.status !== 401) wrong.push(`${name(d)}: revoked key answered ${r.status} ${r.code}`);
      if (f.status !== 403) wrong.push(`${name(d)}: fenced key answered ${f.status} ${f.code}`);
    }
    expect(wrong).toEqual([]);
  }, 120_000);

  it("an over-limit key gets chat's 429 and a policy-denied key chat's 403 on every \"call\" route", async () => {
    const calls = keyed.filter((d) => d.gate === "call");
    expect(calls.length).toBeGreaterThan(25);
    const deny = await env.key({ policy: { version: "2024-01-01", statements: [{ effect: "Deny", actions: ["*"], resources: ["*"] }] } });
    const onChat = { limited: undefined as Answer | undefined, denied: await send(calls.find((d) => d.path === "/v1/chat/completions")!, deny) };
    expect(onChat.denied).toEqual({ status: 403, code: "policy_denied" });
    const wrong: string[] = [];
    for (const d of calls) {
      // per_minute 1: the first request takes the one slot, whatever it answers
      const limited = await env.key({ rate_limits: { per_minute: 1 } });
      await send(d, limited);
      const second = await send(d, limited);
      const denied = await send(d, deny);
      if (second.status !== 429) wrong.push(`${name(d)}: over-limit key answered ${second.status} ${second.code}`);
      if (denied.status !== 403) wrong.push(`${name(d)}: policy-denied key answered ${denied.status} ${denied.code}`);
      // the OpenAI-shaped routes name the same code as chat
      if (second.code && /^[a-z_]+$/.test(second.code) && !second.code.endsWith("_error") && second.code !== "rate_limit_exceeded") wrong.push(`${name(d)}: over-limit code ${second.code}`);
      if (denied.code && /^[a-z_]+$/.test(denied.code) && !denied.code.endsWith("_error") && denied.code !== "policy_denied") wrong.push(`${name(d)}: denied code ${denied.code}`);
    }
    expect(wrong).toEqual([]);
  }, 180_000);

  it("loopback without a key: anonymous on every keyed route, except key management, audit and usage (401)", async () => {
    const identity = keyed.filter((d) => d.path.startsWith("/v1/api-keys") || d.path === "/v1/audit-logs" || d.path === "/v1/usage");
    expect(identity.length).toBe(8); // six key-management routes, the audit log, usage
    const wrong: string[] = [];
    for (const d of keyed) {
      if (SAMPLES[name(d)].session) continue; // a console session stands for a key by definition
      const a = await send(d, { id: "none", secret: "" });
      const needsKey = identity.includes(d);
      if (needsKey && a.status !== 401) wrong.push(`${name(d)}: answered ${a.status} without a key`);
      if (!needsKey && a.status === 401) wrong.push(`${name(d)}: refused anonymous loopback (401 ${a.code})`);
    }
    expect(wrong).toEqual([]);
  }, 120_000);

  it("a route that is not in the route table fails start-up, naming it", () => {
    const r = new Router();
    r.post("/v1/new-thing", (ctx) => {
      ctx.body = "ungated";
    });
    expect(() => createHandler(env.svc.svc, [r])).toThrow(/POST \/v1\/new-thing is not in the route table/);
  });
});
