// Key scopes on every scoped route: a valid key without the scope gets 403 permission_denied
// naming it; keys without a scopes list keep working everywhere (all scopes but owner).
import path from "node:path";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";
import { postJson } from "../helpers/http";

describe("key scopes", () => {
  let s: TestSvc;
  let admin: string;
  const mk = async (body: Record<string, unknown>) => {
    const r = await postJson(`${s.url}/v1/api-keys`, { name: "k", ...body }, { authorization: `Bearer ${admin}` });
    return r;
  };
  const keyWith = async (scopes?: string[]) => (await mk(scopes ? { scopes } : {})).json.api_key as string;

  beforeAll(async () => {
    const home = await tempDir("svc-scopes-");
    s = await startTestSvc({ home });
    admin = readFileSync(path.join(home, "admin.key"), "utf8").trim();
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
  });

  it("validates scopes and shows them on the key", async () => {
    const bad = await mk({ scopes: ["inference", "root"] });
    expect(bad.status).toBe(400);
    const ok = await mk({ scopes: ["tools"], audience: "agent:far" });
    expect(ok.status).toBe(201);
    expect(ok.json).toMatchObject({ scopes: ["tools"], effective_scopes: ["tools"], audience: "agent:far" });
    const legacy = await mk({});
    expect(legacy.json.scopes).toBeNull();
    expect(legacy.json.effective_scopes).toEqual(["inference", "tools", "agents:run", "agents:dispatch", "memory"]);
  });

  const inference: Array<[string, unknown]> = [
    ["/v1/chat/completions", { model: "x", messages: [{ role: "user", content: "hi" }] }],
    ["/v1/completions", { model: "x", prompt: "hi" }],
    ["/v1/responses", { model: "x", input: "hi" }],
    ["/v1/embeddings", { model: "x", input: "hi" }],
    ["/v1/messages", { model: "x", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }],
    ["/api/chat", { model: "x", messages: [{ role: "user", content: "hi" }] }],
    ["/api/generate", { model: "x", prompt: "hi" }],
    ["/api/embed", { model: "x", input: "hi" }],
  ];

  it("refuses every inference route to a key without the inference scope (403 naming it)", async () => {
    const k = await keyWith(["tools"]);
    for (const [p, body] of inference) {
      const r = await postJson(s.url + p, body, { authorization: `Bearer ${k}` });
      expect(r.status, p).toBe(403);
      expect(r.text, p).toMatch(/lacks the \\"inference\\" scope/); // the JSON-escaped message, in each protocol's error shape
    }
    const models = await fetch(`${s.url}/v1/models`, { headers: { authorization: `Bearer ${k}` } });
    expect(models.status).toBe(403); // model discovery belongs to the inference scope too
  });

  it("refuses /mcp routes to a key without the tools scope", async () => {
    const k = await keyWith(["inference"]);
    const h = { authorization: `Bearer ${k}` };
    const tools = await fetch(`${s.url}/mcp/tools`, { headers: h });
    expect(tools.status).toBe(403);
    expect(((await tools.json()) as any).error.message).toContain('"tools" scope');
    const call = await postJson(`${s.url}/mcp/call`, { name: "svc_time", arguments: {} }, h);
    expect(call.status).toBe(403);
    const mcp = await postJson(`${s.url}/mcp`, { jsonrpc: "2.0", id: 1, method: "initialize", params: {} }, { ...h, accept: "application/json, text/event-stream" });
    expect(mcp.status).toBe(403);
    const withTools = await keyWith(["tools"]);
    expect((await fetch(`${s.url}/mcp/tools`, { headers: { authorization: `Bearer ${withTools}` } })).status).toBe(200);
  });

  it("refuses memory routes to a key without the memory scope", async () => {
    const k = await keyWith(["inference", "tools"]);
    const h = { authorization: `Bearer ${k}` };
    const search = await fetch(`${s.url}/memory/search?agent_id=a&q=x`, { headers: h });
    expect(search.status).toBe(403);
    expect(((await search.json()) as any).error.message).toContain('"memory" scope');
    const ingest = await postJson(`${s.url}/memory/ingest`, { agent_id: "a", conversation_id: "c", turns: [{ user: "hi", assistant: "yo" }] }, h);
    expect(ingest.status).toBe(403);
    const withMemory = await keyWith(["memory"]);
    const ok = await fetch(`${s.url}/memory/search?agent_id=a&q=x`, { headers: { authorization: `Bearer ${withMemory}` } });
    // past the scope check: the answer is about the agent, which does not exist here
    expect(ok.status).toBe(404);
    expect(((await ok.json()) as any).error).toMatchObject({ code: "not_found", message: expect.stringContaining('agent "a"') });
  });

  it("refuses agent run and dispatch to a key without agents:run / agents:dispatch, and a key of another agent's audience", async () => {
    const k = await keyWith(["inference", "tools"]);
    const h = { authorization: `Bearer ${k}` };
    const run = await postJson(`${s.url}/agents/any/run`, { prompt: "hi" }, h);
    expect(run.status).toBe(403);
    expect(run.json.error.message).toContain('"agents:run" scope');
    const disp = await postJson(`${s.url}/agents/any/dispatch`, { prompt: "hi" }, h);
    expect(disp.status).toBe(403);
    expect(disp.json.error.message).toContain('"agents:dispatch" scope');
    const other = (await mk({ scopes: ["agents:run"], audience: "agent:mine" })).json.api_key;
    const wrong = await postJson(`${s.url}/agents/theirs/run`, { prompt: "hi" }, { authorization: `Bearer ${other}` });
    expect(wrong.status).toBe(401);
    expect(wrong.json.error.code).toBe("wrong_audience");
    const right = await postJson(`${s.url}/agents/mine/run`, { prompt: "hi" }, { authorization: `Bearer ${other}` });
    expect(right.status).toBe(404); // past authorization: the agent does not exist
  });

  it("keys without scopes keep working on every route", async () => {
    const k = await keyWith(undefined);
    const h = { authorization: `Bearer ${k}` };
    expect((await fetch(`${s.url}/mcp/tools`, { headers: h })).status).toBe(200);
    const chat = await postJson(`${s.url}/v1/chat/completions`, inference[0][1], h);
    expect(chat.status).toBe(404); // past authorization: no such model
    expect((await postJson(`${s.url}/agents/none/run`, { prompt: "hi" }, h)).status).toBe(404);
  });
});
