// One gate on every keyed route: a key's rate limit, max_requests, policy Deny (model, provider,
// action, time window) and budget hold on a media route, on /mcp/call and on /mcp (a tools/call
// inside a session) exactly as on chat: the same status and the same error body shape. Also: a
// Deny on tools:call for one tool, and a priced image charged to a budgeted key.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEnv, standIn, provider, type Env, type StandIn } from "./fixtures";
import { mediaStandin } from "../media/standin";

const CRED = "gate-media-cred";

interface Answer {
  status: number;
  json: any;
  headers: Headers;
}

async function answer(res: Response): Promise<Answer> {
  const text = await res.text();
  let json: any = text;
  try {
    json = JSON.parse(text);
  } catch {
    // an SSE answer (MCP): kept as text
  }
  return { status: res.status, json, headers: res.headers };
}

describe("the gate on media, /mcp/call and /mcp", () => {
  let env: Env;
  let up: StandIn;
  let media: Awaited<ReturnType<typeof mediaStandin>>;

  beforeAll(async () => {
    env = await startEnv();
    up = await standIn();
    media = await mediaStandin(CRED);
    process.env.SVC_TEST_GATE_MEDIA_CRED = CRED;
    await env.apply([
      provider("chat-up", up, [{ name: "gpt-x", inputPerMillion: 1, outputPerMillion: 1 }]),
      {
        kind: "Provider",
        name: "media-up",
        spec: {
          type: "openai",
          baseUrl: media.baseUrl,
          credential: "env:SVC_TEST_GATE_MEDIA_CRED",
          capabilities: ["image_generation"],
          models: [{ name: "img", perImage: 0.04 }, { name: "free-img" }],
        },
      },
    ]);
  }, 60_000);
  afterAll(async () => {
    await env?.stop();
    await up?.close();
    await media?.close();
    delete process.env.SVC_TEST_GATE_MEDIA_CRED;
  });

  const auth = (secret: string) => ({ authorization: `Bearer ${secret}`, "content-type": "application/json" });

  const chat = async (secret: string) =>
    answer(await fetch(`${env.url}/v1/chat/completions`, { method: "POST", headers: auth(secret), body: JSON.stringify({ model: "gpt-x", messages: [{ role: "user", content: "hi" }] }) }));
  const image = async (secret: string, model = "img") =>
    answer(await fetch(`${env.url}/v1/images/generations`, { method: "POST", headers: auth(secret), body: JSON.stringify({ model, prompt: "a cat" }) }));
  const toolCall = async (secret: string, name = "svc_time") =>
    answer(await fetch(`${env.url}/mcp/call`, { method: "POST", headers: auth(secret), body: JSON.stringify({ name, arguments: {} }) }));

  /** An MCP session at /mcp (initialize + initialized), then one tools/call per call of the result. */
  async function mcpSession(secret: string) {
    const headers = { ...auth(secret), accept: "application/json, text/event-stream" };
    const init = await fetch(`${env.url}/mcp`, {
      method: "POST",
      headers,
      body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "gate-test", version: "1" } } }),
    });
    expect(init.status).toBe(200);
    await init.text();
    const sid = init.headers.get("mcp-session-id")!;
    expect(sid).toBeTruthy();
    const h = { ...headers, "mcp-session-id": sid };
    const ack = await fetch(`${env.url}/mcp`, { method: "POST", headers: h, body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) });
    await ack.text();
    let id = 1;
    return async (name = "svc_time") =>
      answer(await fetch(`${env.url}/mcp`, { method: "POST", headers: h, body: JSON.stringify({ jsonrpc: "2.0", id: id++, method: "tools/call", params: { name, arguments: {} } }) }));
  }

  type Route = [name: string, (secret: string) => Promise<() => Promise<Answer>>];
  const routes: Route[] = [
    ["chat", async (s) => () => chat(s)],
    ["media", async (s) => () => image(s)],
    ["/mcp/call", async (s) => () => toolCall(s)],
    ["/mcp", async (s) => mcpSession(s).then((call) => () => call())],
  ];

  /** The refusal every route gives for keys made by `mk` after `okFirst` answered calls. */
  async function refusals(mk: () => Promise<string>, okFirst: number) {
    const out: Array<[string, Answer]> = [];
    for (const [name, open] of routes) {
      const send = await open(await mk());
      for (let i = 0; i < okFirst; i++) {
        const ok = await send();
        expect(ok.status, `${name} call ${i + 1}`).toBe(200);
      }
      out.push([name, await send()]);
    }
    return out;
  }

  function sameAsChat(all: Array<[string, Answer]>, status: number, code: string) {
    const [, onChat] = all[0];
    expect(onChat.status).toBe(status);
    expect(onChat.json.error.code).toBe(code);
    for (const [name, a] of all) {
      expect(a.status, name).toBe(status);
      expect(Object.keys(a.json.error).sort(), name).toEqual(["code", "message", "param", "type"]);
      expect(a.json.error.type, name).toBe(onChat.json.error.type);
      expect(a.json.error.code, name).toBe(code);
    }
  }

  it("a rate limit: the second call in a minute is 429 with Retry-After and x-ratelimit-*, on every route", async () => {
    const all = await refusals(async () => (await env.key({ rate_limits: { per_minute: 1 } })).secret, 1);
    sameAsChat(all, 429, "rate_limit_exceeded");
    for (const [name, a] of all) {
      expect(Number(a.headers.get("retry-after")), name).toBeGreaterThan(0);
      expect(a.headers.get("x-ratelimit-limit-requests"), name).toBe("1");
      expect(a.headers.get("x-ratelimit-remaining-requests"), name).toBe("0");
    }
  });

  it("max_requests of a temporary key: 402 quota_exceeded once used up, on every route", async () => {
    const temp = async () => {
      const r = await env.api("POST", "/v1/api-keys/temporary", { expires_in: 600, permissions: { models: ["gpt-x", "img"], max_requests: 1 } });
      expect(r.status).toBe(201);
      return r.json.api_key as string;
    };
    const all = await refusals(temp, 1);
    sameAsChat(all, 402, "quota_exceeded");
    for (const [name, a] of all) expect(a.json.error.message, name).toContain("max_requests=1");
  });

  it("policy Deny on the action and in a time window: 403 policy_denied on every route", async () => {
    const denyAll = await refusals(async () => (await env.key({ policy: { version: "2024-01-01", statements: [{ effect: "Deny", actions: ["*"], resources: ["*"] }] } })).secret, 0);
    sameAsChat(denyAll, 403, "policy_denied");
    // start == end: the window is the whole day, so the Deny holds whenever the test runs
    const window = { effect: "Deny", actions: ["*"], resources: ["*"], condition: { time_between: { start: "00:00", end: "00:00", timezone: "UTC" } } };
    const allow = { effect: "Allow", actions: ["*"], resources: ["*"] };
    const inWindow = await refusals(async () => (await env.key({ policy: { version: "2024-01-01", statements: [allow, window] } })).secret, 0);
    sameAsChat(inWindow, 403, "policy_denied");
    // the action itself: denying media and tools leaves chat served
    const k = await env.key({ policy: { version: "2024-01-01", statements: [allow, { effect: "Deny", actions: ["media:*", "tools:call"], resources: ["*"] }] } });
    expect((await chat(k.secret)).status).toBe(200);
    const refused = [await image(k.secret), await toolCall(k.secret), await (await mcpSession(k.secret))()];
    for (const a of refused) expect([a.status, a.json.error.code]).toEqual([403, "policy_denied"]);
  });

  it("policy Deny on a model and on a provider holds on the media route as on chat", async () => {
    const allow = { effect: "Allow", actions: ["*"], resources: ["*"] };
    const onModel = await env.key({ policy: { version: "2024-01-01", statements: [allow, { effect: "Deny", actions: ["*"], resources: ["model:gpt-x", "model:img"] }] } });
    const onProvider = await env.key({ policy: { version: "2024-01-01", statements: [allow, { effect: "Deny", actions: ["*"], resources: ["*"], condition: { not_in: ["nobody"] } }] } });
    const notIn = await env.key({ policy: { version: "2024-01-01", statements: [{ effect: "Allow", actions: ["*"], resources: ["*"], condition: { not_in: ["chat-up", "media-up"] } }] } });
    for (const k of [onModel, onProvider, notIn]) {
      const c = await chat(k.secret);
      const m = await image(k.secret);
      expect([c.status, c.json.error.code]).toEqual([403, "policy_denied"]);
      expect([m.status, m.json.error.code]).toEqual([403, "policy_denied"]);
      expect(Object.keys(m.json.error).sort()).toEqual(Object.keys(c.json.error).sort());
      expect(m.json.error.param).toBe(c.json.error.param);
    }
    expect((await image(notIn.secret)).json.error.message).toContain("provider:media-up");
  });

  it("a Deny on tools:call for one tool refuses that tool only, on /mcp/call and /mcp", async () => {
    const k = await env.key({ policy: { version: "2024-01-01", statements: [{ effect: "Allow", actions: ["*"], resources: ["*"] }, { effect: "Deny", actions: ["tools:call"], resources: ["tool:svc_time"] }] } });
    const denied = await toolCall(k.secret, "svc_time");
    expect([denied.status, denied.json.error.code]).toEqual([403, "policy_denied"]);
    expect(denied.json.error.message).toContain("tool:svc_time");
    expect((await toolCall(k.secret, "svc_models")).status).toBe(200);
    const call = await mcpSession(k.secret);
    const inSession = await call("svc_time");
    expect([inSession.status, inSession.json.error.code]).toEqual([403, "policy_denied"]);
    const other = await call("svc_models");
    expect(other.status).toBe(200);
    expect(String(other.json)).not.toContain("policy_denied");
    // every call, refused or not, is in the key's audit log under tools.call
    const page = await env.gw.audit.query({ keyIds: [k.id] });
    const tools = page.data.filter((e) => e.action === "tools.call");
    expect(tools.map((e) => e.status).sort()).toEqual(["policy_denied", "policy_denied", "success", "success"]);
  });

  it("a priced image is charged to a budgeted key; once the budget is spent every route refuses 402", async () => {
    const k = await env.key({ budget_limits: { total: 0.04 } });
    const first = await image(k.secret);
    expect(first.status).toBe(200);
    const usage = await env.api("GET", `/v1/api-keys/${k.id}`);
    expect(usage.json.usage.total.spend_usd).toBeCloseTo(0.04, 9);
    const all: Array<[string, Answer]> = [
      ["chat", await chat(k.secret)],
      ["media", await image(k.secret)],
      ["/mcp/call", await toolCall(k.secret)],
      ["/mcp", await (await mcpSession(k.secret))()],
    ];
    sameAsChat(all, 402, "budget_exceeded");
    // unpriced media stays refused for a budgeted key, naming the missing price
    const fresh = await env.key({ budget_limits: { total: 5 } });
    const unpriced = await image(fresh.secret, "free-img");
    expect(unpriced.status).toBe(403);
    expect(unpriced.json.error.message).toContain("perImage");
  });
});
