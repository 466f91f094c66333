// Memory routes pass the whole gate, like /mcp/call: a key's rate limit and max_requests count
// memory calls and refuse them with the same status and body as on chat, and every call (served
// or refused) is in the key's audit log under memory.<operation>.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEnv, standIn, provider, type Env, type StandIn } from "./fixtures";

interface Answer {
  status: number;
  json: any;
  headers: Headers;
}

describe("the gate on memory routes", () => {
  let env: Env;
  let up: StandIn;

  beforeAll(async () => {
    env = await startEnv();
    up = await standIn();
    await env.apply([provider("mem-up", up, [{ name: "gpt-x", inputPerMillion: 1, outputPerMillion: 1 }])]);
  }, 60_000);
  afterAll(async () => {
    await env?.stop();
    await up?.close();
  });

  const send = async (secret: string, method: string, p: string, body?: unknown): Promise<Answer> => {
    const res = await fetch(env.url + p, {
      method,
      headers: { authorization: `Bearer ${secret}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: JSON.parse(text), headers: res.headers };
  };
  const chat = (s: string) => send(s, "POST", "/v1/chat/completions", { model: "gpt-x", messages: [{ role: "user", content: "hi" }] });
  const runs = (s: string) => send(s, "GET", "/memory/runs");

  function sameAsChat(onChat: Answer, onMemory: Answer, status: number, code: string) {
    expect(onChat.status).toBe(status);
    expect(onChat.json.error.code).toBe(code);
    expect(onMemory.status).toBe(status);
    expect(Object.keys(onMemory.json.error).sort()).toEqual(["code", "message", "param", "type"]);
    expect(onMemory.json.error.type).toBe(onChat.json.error.type);
    expect(onMemory.json.error.code).toBe(code);
  }

  it("a rate limit: the second memory call in a minute is 429 with Retry-After and x-ratelimit-*, as on chat", async () => {
    const c = await env.key({ rate_limits: { per_minute: 1 } });
    expect((await chat(c.secret)).status).toBe(200);
    const onChat = await chat(c.secret);

    const m = await env.key({ rate_limits: { per_minute: 1 } });
    const first = await runs(m.secret);
    expect(first.status).toBe(200);
    expect(first.json.object).toBe("list");
    expect(first.headers.get("x-ratelimit-remaining-requests")).toBe("0");
    const onMemory = await runs(m.secret);
    sameAsChat(onChat, onMemory, 429, "rate_limit_exceeded");
    expect(Number(onMemory.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(onMemory.headers.get("x-ratelimit-limit-requests")).toBe("1");
    expect(onMemory.headers.get("x-ratelimit-remaining-requests")).toBe("0");

    // both calls are in the key's audit log, the refusal with its code
    const page = await env.gw.audit.query({ keyIds: [m.id] });
    expect(page.data.filter((e) => e.action === "memory.runs").map((e) => e.status).sort()).toEqual(["rate_limit_exceeded", "success"]);
  });

  it("max_requests of a temporary key counts memory calls: 402 quota_exceeded once used up, as on chat", async () => {
    const temp = async () => {
      const r = await env.api("POST", "/v1/api-keys/temporary", { expires_in: 600, permissions: { models: ["gpt-x"], max_requests: 1 } });
      expect(r.status).toBe(201);
      return r.json.api_key as string;
    };
    const c = await temp();
    expect((await chat(c)).status).toBe(200);
    const onChat = await chat(c);
    const m = await temp();
    expect((await runs(m)).status).toBe(200);
    const onMemory = await runs(m);
    sameAsChat(onChat, onMemory, 402, "quota_exceeded");
    expect(onMemory.json.error.message).toContain("max_requests=1");
    // the memory call used the request chat would have had
    const m2 = await temp();
    expect((await runs(m2)).status).toBe(200);
    sameAsChat(onChat, await chat(m2), 402, "quota_exceeded");
  });

  it("a refused and a failed memory call are audited under memory.<operation>, with the key", async () => {
    const k = await env.key({ policy: { version: "2024-01-01", statements: [{ effect: "Allow", actions: ["*"], resources: ["*"] }, { effect: "Deny", actions: ["memory:search"], resources: ["*"] }] } });
    const denied = await send(k.secret, "GET", "/memory/search?agent_id=nobody&q=x");
    expect([denied.status, denied.json.error.code]).toEqual([403, "policy_denied"]);
    const missing = await send(k.secret, "GET", "/memory/status?agent_id=nobody");
    expect([missing.status, missing.json.error.code]).toEqual([404, "not_found"]);
    expect((await runs(k.secret)).status).toBe(200);
    const page = await env.gw.audit.query({ keyIds: [k.id] });
    const rows = page.data.filter((e) => e.action.startsWith("memory.")).map((e) => `${e.action} ${e.status}`);
    expect(rows.sort()).toEqual(["memory.runs success", "memory.search policy_denied", "memory.status not_found"]);
  });
});
