// The gate for agents and attribution: the agents:run / agents:dispatch scope alone runs or
// dispatches an agent the key's audience allows (its model calls are the agent's, not the caller's
// inference); X-Svc-Agent-Id attributes a request only to an agent the key's scope and audience
// allow, else 403 naming the agent, and nothing goes into that agent's memory.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { startMemEnv, type MemEnv } from "../memory/env";

let env: MemEnv;

beforeAll(async () => {
  env = await startMemEnv(["helper", "mem2"]);
  for (const a of ["helper", "mem2"]) env.up.script(a, (b) => ({ text: `ok: ${b.messages.filter((m) => m.role === "user").pop()?.content}` }));
  await env.memoryConfig({ summaryDebounceSeconds: 3600 });
  await env.agent("helper");
  await env.agent("mem2");
}, 60_000);
afterAll(async () => {
  await env?.stop();
});

const client = (secret: string, headers: Record<string, string> = {}) => new OpenAI({ apiKey: secret, baseURL: `${env.url}/v1`, maxRetries: 0, defaultHeaders: headers });

describe("agents:run and agents:dispatch scopes", () => {
  it("agents:run alone runs an agent (the agent's model calls need no inference scope)", async () => {
    const k = await env.key({ scopes: ["agents:run"] });
    const r = await env.api("POST", "/agents/helper/run", { prompt: "hello", conversation_id: "s1" }, k.secret);
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect(r.json).toMatchObject({ status: "completed", output: "ok: hello" });
    // the scope does not open inference or dispatch
    const chat = await env.api("POST", "/v1/chat/completions", { model: "helper", messages: [{ role: "user", content: "x" }] }, k.secret);
    expect([chat.status, chat.json.error.code]).toEqual([403, "permission_denied"]);
    expect(chat.json.error.message).toContain('"inference" scope');
    const d = await env.api("POST", "/agents/helper/dispatch", { prompt: "later" }, k.secret);
    expect([d.status, d.json.error.message]).toEqual([403, 'this key lacks the "agents:dispatch" scope']);
  });

  it("agents:dispatch alone dispatches an agent, whose task runs its model calls", async () => {
    const k = await env.key({ scopes: ["agents:dispatch"] });
    const d = await env.api("POST", "/agents/helper/dispatch", { prompt: "in the background" }, k.secret);
    expect(d.status, JSON.stringify(d.json)).toBe(202);
    let t: any;
    for (let i = 0; i < 200; i++) {
      t = (await env.api("GET", `/tasks/${d.json.id}`, undefined, k.secret)).json;
      if (t.status === "completed" || t.status === "failed") break;
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(t.status, JSON.stringify(t)).toBe("completed");
    expect(t.result?.output ?? t.output).toBe("ok: in the background");
  });

  it("an agent-audience key runs only its agent", async () => {
    const k = await env.key({ scopes: ["agents:run"], audience: "agent:helper" });
    expect((await env.api("POST", "/agents/helper/run", { prompt: "mine" }, k.secret)).status).toBe(200);
    const other = await env.api("POST", "/agents/mem2/run", { prompt: "not mine" }, k.secret);
    expect([other.status, other.json.error.code]).toEqual([401, "wrong_audience"]);
  });
});

describe("X-Svc-Agent-Id is attribution only", () => {
  it("a key whose audience is another agent is refused 403 naming the agent, and nothing is buffered", async () => {
    const k = await env.key({ scopes: ["inference"], audience: "agent:helper" });
    const ingest = await env.api("POST", "/memory/ingest", { agent_id: "mem2", conversation_id: "x", turns: [{ user: "a", assistant: "b" }] }, k.secret);
    expect(ingest.status).toBe(403);
    const e = await client(k.secret, { "x-svc-agent-id": "mem2", "x-svc-conversation-id": "att1" })
      .chat.completions.create({ model: "mem2", messages: [{ role: "user", content: "sneak this in" }] })
      .then(() => null, (err) => err);
    expect(e?.status).toBe(403);
    expect(e?.code).toBe("permission_denied");
    expect(e?.message).toContain('"mem2"');
    await env.mem.idle();
    expect(env.mem.store.pending("mem2", "att1")).toEqual([]);
  });

  it("a key without the memory scope cannot attribute, even to an agent its audience names", async () => {
    const k = await env.key({ scopes: ["inference"] });
    const e = await client(k.secret, { "x-svc-agent-id": "mem2", "x-svc-conversation-id": "att2" })
      .chat.completions.create({ model: "mem2", messages: [{ role: "user", content: "no memory scope" }] })
      .then(() => null, (err) => err);
    expect([e?.status, e?.code]).toEqual([403, "permission_denied"]);
    expect(e?.message).toContain('"memory" scope');
    await env.mem.idle();
    expect(env.mem.store.pending("mem2", "att2")).toEqual([]);
  });

  it("a key with the memory scope and a matching audience attributes and buffers the turn", async () => {
    const k = await env.key({ scopes: ["inference", "memory"], audience: "agent:mem2" });
    await client(k.secret, { "x-svc-agent-id": "mem2", "x-svc-conversation-id": "att3" }).chat.completions.create({ model: "mem2", messages: [{ role: "user", content: "allowed turn" }] });
    await env.mem.idle();
    expect(env.mem.store.pending("mem2", "att3").map((s) => s.userText)).toEqual(["allowed turn"]);
  });
});
