// Synchronous agent runs (POST /agents/{id}/run, JSON and SSE) against a scripted stand-in
// provider emitting real OpenAI tool calls and the real server-everything as the tool catalog.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { startAgentEnv, type AgentEnv } from "./env";
import { lastTool, parseSse } from "./scripted";
import { until } from "../helpers/http";
import { pinToMiddayUtc } from "../helpers/clock";

// "today's" usage is compared across steps: a clock that cannot cross a UTC midnight in this file
afterAll(pinToMiddayUtc());

let env: AgentEnv;
const M = ["multi", "budget", "denied", "asker", "attributed", "missing-tool", "long"];

beforeAll(async () => {
  env = await startAgentEnv({ models: M });
  // echo, then add, then answer with what the tools returned
  env.up.script("multi", (b, turn) => {
    if (turn === 0) return { text: "Let me check. ", calls: [{ name: "everything_echo", args: { message: "hi there" } }] };
    if (turn === 1) return { calls: [{ name: "everything_get-sum", args: { a: 2, b: 3 } }] };
    return { text: `Done. ${lastTool(b)}` };
  });
  env.up.script("budget", () => ({ calls: [{ name: "everything_echo", args: { message: "again" } }] }));
  env.up.script("denied", (b, turn) => (turn === 0 ? { calls: [{ name: "everything_get-sum", args: { a: 1, b: 1 } }] } : { text: `told: ${lastTool(b)}` }));
  env.up.script("asker", (b, turn) => (turn === 0 ? { calls: [{ name: "everything_echo", args: { message: "may I?" } }] } : { text: "ok" }));
  env.up.script("attributed", (b, turn) => (turn === 0 ? { calls: [{ name: "everything_echo", args: { message: "x" } }] } : { text: "fine" }));
  env.up.script("long", () => ({ calls: [{ name: "everything_trigger-long-running-operation", args: { duration: 60, steps: 60 } }] }));
  await env.agent("long");
  await env.agent("multi");
  await env.agent("budget", { maxIterations: 2 });
  await env.agent("denied", { toolPolicy: { allow: ["everything_*"], deny: ["everything_get-sum"] } });
  await env.agent("asker", { toolPolicy: { allow: ["everything_*"], tools: { everything_echo: "ask" } } });
  await env.agent("attributed", { maxOutputTokens: 50 });
  await env.ready("Agent", "multi");
}, 60_000);
afterAll(async () => {
  await env?.stop();
});

const run = (agent: string, body: Record<string, unknown>, key?: string) => env.api("POST", `/agents/${agent}/run`, body, key);

describe("POST /agents/{id}/run", () => {
  it("runs a multi-step loop: tool calls go to the real MCP server and their results back to the model", async () => {
    const before = env.up.requests.length;
    const r = await run("multi", { prompt: "echo then add" });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ object: "agent.run", agent: "multi", status: "completed", iterations: 3 });
    expect(r.json.output).toMatch(/^Done\. .*5/);
    expect(r.json.usage).toEqual({ prompt_tokens: 60, completion_tokens: 30 });
    const sent = env.up.requests.slice(before);
    expect(sent).toHaveLength(3);
    expect(sent.every((b) => b.stream !== true)).toBe(true);
    expect(sent[0].messages[0]).toMatchObject({ role: "system", content: "You are multi." });
    expect(sent[0].tools!.map((t) => t.function.name)).toEqual(expect.arrayContaining(["everything_echo", "everything_get-sum", "clarify"]));
    // the second call carries the assistant's tool call and the MCP server's answer
    const tool = sent[1].messages.find((m) => m.role === "tool");
    expect(tool?.content).toBe("Echo: hi there");
    expect(sent[1].messages.find((m) => m.role === "assistant")?.tool_calls?.[0].function.name).toBe("everything_echo");
  });

  it("streams the run as SSE events: step, tool_call, tool_result, delta, done (model calls streamed too)", async () => {
    const before = env.up.requests.length;
    const res = await fetch(`${env.url}/agents/multi/run`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ prompt: "go", stream: true }) });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/text\/event-stream/);
    const events = parseSse(await res.text());
    const kinds = events.map((e) => e.event);
    expect(kinds[0]).toBe("step");
    expect(kinds).toEqual(expect.arrayContaining(["tool_call", "tool_result", "delta"]));
    expect(kinds.at(-1)).toBe("done");
    expect(kinds.filter((k) => k === "step")).toHaveLength(3);
    const results = events.filter((e) => e.event === "tool_result").map((e) => e.data);
    expect(results[0]).toMatchObject({ name: "everything_echo", is_error: false, outcome: "ok", content: "Echo: hi there" });
    expect(results[1]).toMatchObject({ name: "everything_get-sum", outcome: "ok" });
    const done = events.at(-1)!.data;
    expect(done).toMatchObject({ status: "completed", iterations: 3 });
    expect(events.filter((e) => e.event === "delta").map((e) => e.data.text).join("")).toBe("Let me check. " + done.output);
    expect(env.up.requests.slice(before).every((b) => b.stream === true)).toBe(true);
  });

  it("a client that goes away mid-stream cancels the run: the in-flight MCP call is aborted", async () => {
    const ac = new AbortController();
    const res = await fetch(`${env.url}/agents/long/run`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ prompt: "wait", stream: true }), signal: ac.signal });
    const reader = res.body!.getReader();
    let text = "";
    while (!text.includes("event: tool_call")) text += new TextDecoder().decode((await reader.read()).value);
    ac.abort();
    await until(() => env.tools.aborted.includes("everything_trigger-long-running-operation"), 10_000);
  });

  it("stops at the iteration budget with an incomplete result naming it", async () => {
    const r = await run("budget", { prompt: "loop forever" });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ status: "incomplete", reason: "iteration_budget", iterations: 2 });
    expect(r.json.message).toMatch(/iteration budget reached: 2 model calls \(Agent\.spec\.maxIterations\)/);
  });

  it("refuses a tool denied by policy: never offered, never run, and the model is told", async () => {
    const calls = env.tools.calls.get("everything_get-sum") ?? 0;
    const before = env.up.requests.length;
    const r = await run("denied", { prompt: "add" });
    expect(r.json).toMatchObject({ status: "completed" });
    expect(r.json.output).toMatch(/told: Error: tool everything_get-sum is denied by this agent's tool policy/);
    expect(env.tools.calls.get("everything_get-sum") ?? 0).toBe(calls);
    expect(env.up.requests[before].tools!.map((t) => t.function.name)).not.toContain("everything_get-sum");
  });

  it("a tool in ask mode ends a synchronous run as incomplete / input_required with the pending call", async () => {
    const calls = env.tools.calls.get("everything_echo") ?? 0;
    const r = await run("asker", { prompt: "echo" });
    expect(r.json).toMatchObject({ status: "incomplete", reason: "input_required", pending: { kind: "approval", tool: "everything_echo", arguments: { message: "may I?" } } });
    expect(r.json.message).toMatch(/needs an approval/);
    expect(env.tools.calls.get("everything_echo") ?? 0).toBe(calls);
  });

  it("model calls are the caller's: its key's audit entries carry the agent, and its budget refuses the run", async () => {
    const k = await env.key({ budget_limits: { daily: 10 } });
    const r = await run("attributed", { prompt: "hi" }, k.secret);
    expect(r.json.status).toBe("completed");
    let page: any;
    const deadline = Date.now() + 5000;
    do {
      page = await env.gw.audit.query({ keyIds: [k.id] });
      if (page.data.length >= 2) break;
      await new Promise((r) => setTimeout(r, 50));
    } while (Date.now() < deadline);
    expect(page.data).toHaveLength(2);
    expect(page.data.every((e: any) => e.metadata?.agent_id === "attributed" && e.model === "attributed" && e.status === "success")).toBe(true);
    const usage = await env.api("GET", `/v1/api-keys/${k.id}`);
    expect(usage.json.usage.today.requests).toBe(2);

    const poor = await env.key({ budget_limits: { daily: 0.000001 } });
    const refused = await run("attributed", { prompt: "hi" }, poor.secret);
    expect(refused.status).toBe(402);
    expect(refused.json.error.code).toBe("budget_exceeded");
  });

  it("refuses plainly: unknown agent 404, bad body 400, unready agent 503/404 naming what is missing", async () => {
    expect((await run("nope", { prompt: "x" })).status).toBe(404);
    const bad = await run("multi", { messages: "x" });
    expect(bad.status).toBe(400);
    expect(bad.json.error.param).toBe("messages");
    await env.agent("missing-tool", { toolPolicy: { allow: ["everything_echo", "everything_nope"] } });
    const c = await env.ready("Agent", "missing-tool", "False");
    expect(c).toMatchObject({ reason: "ToolNotFound", message: "tool not in the catalog: everything_nope" });
    const r = await run("missing-tool", { prompt: "x" });
    expect(r.status).toBe(503);
    expect(r.json.error.message).toMatch(/ToolNotFound/);
    await env.agent("no-model", { defaultModel: "ghost" });
    expect(await env.ready("Agent", "no-model", "False")).toMatchObject({ reason: "ModelNotFound" });
  });

  it("follows the catalog: a tool that disappears makes the agent unready, and ready again when it returns", async () => {
    await env.agent("watcher", { defaultModel: "multi", toolPolicy: { allow: ["everything_echo"] } });
    await env.ready("Agent", "watcher", "True");
    await env.tools.setHidden(["everything_echo"]);
    expect(await env.ready("Agent", "watcher", "False")).toMatchObject({ reason: "ToolNotFound" });
    const list = await env.api("GET", "/agents");
    expect(list.json.data.find((a: any) => a.id === "watcher")).toMatchObject({ ready: false, reason: "ToolNotFound", default_model: "multi" });
    await env.tools.setHidden([]);
    await env.ready("Agent", "watcher", "True");
  });
});
