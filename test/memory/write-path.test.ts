// The write path: every agent-attributed turn is a durable pending signal; a per-conversation
// debounce (restarted by each turn) on the injected clock, a conversation switch, or an explicit
// flush distills; delegated work (tasks) never flushes the direct-chat session; an agent run is
// one turn however many model calls it makes; X-Svc-Agent-Id turns on protocol routes count.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { startMemEnv, type MemEnv } from "./env";
import { turnOf } from "../agents/scripted";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";

let env: MemEnv;
const has = (needle: string) => env.extractions().filter((c) => JSON.stringify(c.messages).includes(needle));
const runs = async (agent: string) => (await env.api("GET", `/memory/runs?agent_id=${agent}&type=distillation`)).json.data;

beforeAll(async () => {
  env = await startMemEnv(["deb", "sw", "del", "tooly", "proto"]);
  for (const a of ["deb", "sw", "del", "proto"]) env.up.script(a, (b) => ({ text: `ok: ${b.messages.filter((m) => m.role === "user").pop()?.content}` }));
  // two model calls per run: a tool call (svc_time), then the answer
  env.up.script("tooly", (b) => (turnOf(b) === 0 ? { calls: [{ name: "svc_time", args: {} }] } : { text: "It is late." }));
  await env.memoryConfig({ summaryDebounceSeconds: 60 });
  for (const a of ["deb", "sw", "del", "proto"]) await env.agent(a);
  await env.agent("tooly", { toolPolicy: { allow: ["svc_time"] } });
}, 60_000);
afterAll(async () => {
  await env?.stop();
});

describe("debounce (injected clock)", () => {
  it("distills only after summaryDebounceSeconds of quiet; each turn restarts it", async () => {
    const run = (prompt: string) => env.api("POST", "/agents/deb/run", { prompt, conversation_id: "d1" });
    expect((await run("first about debouncing")).json.memory).toMatchObject({ turn: "buffered" });
    await env.advance(59_000);
    expect(has("first about debouncing")).toHaveLength(0);
    await run("second turn"); // restarts the 60 s
    await env.advance(59_000);
    expect(has("first about debouncing")).toHaveLength(0);
    expect(env.mem.store.pending("deb", "d1")).toHaveLength(2);
    await env.advance(1_000);
    const calls = has("first about debouncing");
    expect(calls).toHaveLength(1); // one extraction for the whole session
    expect(JSON.stringify(calls[0].messages)).toContain("second turn");
    expect(env.mem.store.pending("deb", "d1")).toHaveLength(0);
    expect((await runs("deb"))[0]).toMatchObject({ trigger: "debounce", result: { outcome: "distilled", signals: 2, conversation_id: "d1" } });
  });

  it("pending signals survive a restart of the engine and are re-armed", async () => {
    await env.api("POST", "/agents/deb/run", { prompt: "durable turn", conversation_id: "d2" });
    await env.mem.close(); // as at shutdown: timers dropped, signals stay
    expect(env.mem.store.pending("deb", "d2")).toHaveLength(1);
    const { MemoryEngine, embeddedMemory } = await import("../../engines/memory/engine");
    const fresh = embeddedMemory(new MemoryEngine(env.svc.svc, env.clock));
    fresh.start();
    env.svc.svc.engines.memory = fresh;
    env.mem = fresh;
    await env.advance(60_000);
    expect(has("durable turn")).toHaveLength(1);
  });
});

describe("flush triggers", () => {
  it("switching conversation distills the previous one at once; the new one waits", async () => {
    await env.api("POST", "/agents/sw/run", { prompt: "talk in s1", conversation_id: "s1" });
    expect(has("talk in s1")).toHaveLength(0);
    await env.api("POST", "/agents/sw/run", { prompt: "talk in s2", conversation_id: "s2" });
    await env.mem.idle();
    expect(has("talk in s1")).toHaveLength(1);
    expect(has("talk in s2")).toHaveLength(0);
    expect((await runs("sw"))[0]).toMatchObject({ trigger: "conversation_switch", result: { conversation_id: "s1" } });
  });

  it("an explicit flush distills now", async () => {
    const r = await env.api("POST", "/memory/flush", { agent_id: "sw" });
    expect(r.json.sessions).toEqual([{ conversation_id: "s2", outcome: "distilled" }]);
    expect((await env.api("POST", "/memory/flush", { agent_id: "sw" })).json.sessions).toEqual([]);
    expect((await env.api("POST", "/memory/flush", { agent_id: "sw", conversation_id: "s2" })).json.sessions).toEqual([{ conversation_id: "s2", outcome: "skipped:nothing_pending" }]);
  });
});

describe("delegated work", () => {
  it("a task buffers through its own session and never flushes the direct-chat one", async () => {
    await env.api("POST", "/agents/del/run", { prompt: "direct chat in c1", conversation_id: "c1" });
    const t = await env.api("POST", "/agents/del/dispatch", { prompt: "background job about llamas" });
    expect(t.status).toBe(202);
    for (let i = 0; i < 200; i++) {
      const s = await env.api("GET", `/tasks/${t.json.id}`);
      if (s.json.status === "completed") break;
      await new Promise((r) => setTimeout(r, 20));
    }
    await env.mem.idle();
    expect(has("direct chat in c1")).toHaveLength(0); // not flushed by the task
    expect(env.mem.store.pending("del", "c1")).toHaveLength(1);
    const task = env.mem.store.pending("del", `task:${t.json.id}`);
    expect(task).toMatchObject([{ source: "delegated", userText: "background job about llamas" }]);
    // a later direct turn in c1 still counts as the same session (no switch happened)
    await env.api("POST", "/agents/del/run", { prompt: "more direct chat", conversation_id: "c1" });
    await env.mem.idle();
    expect(has("direct chat in c1")).toHaveLength(0);
    await env.advance(60_000);
    expect(has("direct chat in c1")).toHaveLength(1);
    expect(has("background job about llamas")).toHaveLength(1);
  });
});

describe("one turn per agent run; X-Svc-Agent-Id turns", () => {
  it("a run with several model calls records exactly one turn", async () => {
    const before = env.up.requests.filter((r) => r.model === "tooly").length;
    const r = await env.api("POST", "/agents/tooly/run", { prompt: "what time is it", conversation_id: "t1" });
    expect(r.json).toMatchObject({ status: "completed", iterations: 2, output: "It is late.", memory: { turn: "buffered" } });
    expect(env.up.requests.filter((x) => x.model === "tooly").length - before).toBe(2);
    const turns = env.mem.store.pending("tooly", "t1");
    expect(turns).toHaveLength(1);
    expect(turns[0]).toMatchObject({ userText: "what time is it", assistantText: "It is late.", source: "chat" });
    const tr = await env.api("GET", "/memory/search?agent_id=tooly&kind=transcript");
    expect(tr.json.data).toHaveLength(1);
  });

  it("protocol requests with X-Svc-Agent-Id buffer the turn (OpenAI JSON and streamed, Anthropic); without it, nothing", async () => {
    const oa = (headers: Record<string, string>) => new OpenAI({ apiKey: "none", baseURL: `${env.url}/v1`, maxRetries: 0, defaultHeaders: headers });
    const attributed = oa({ "x-svc-agent-id": "proto", "x-svc-conversation-id": "p1" });
    await attributed.chat.completions.create({ model: "proto", messages: [{ role: "user", content: "hello via protocol" }] });
    const stream = await attributed.chat.completions.create({ model: "proto", messages: [{ role: "user", content: "streamed hello" }], stream: true });
    for await (const _ of stream) void _;
    const anth = new Anthropic({ apiKey: "none", baseURL: env.url, maxRetries: 0, defaultHeaders: { "x-svc-agent-id": "proto", "x-svc-conversation-id": "p1" } });
    await anth.messages.create({ model: "proto", max_tokens: 50, messages: [{ role: "user", content: "anthropic hello" }] });
    await oa({ "x-svc-conversation-id": "p1" }).chat.completions.create({ model: "proto", messages: [{ role: "user", content: "not attributed" }] });
    await oa({ "x-svc-agent-id": "no-such-agent" }).chat.completions.create({ model: "proto", messages: [{ role: "user", content: "unknown agent" }] });
    await env.mem.idle();
    const p = env.mem.store.pending("proto", "p1");
    expect(p.map((s) => [s.userText, s.assistantText])).toEqual([
      ["hello via protocol", "ok: hello via protocol"],
      ["streamed hello", "ok: streamed hello"],
      ["anthropic hello", "ok: anthropic hello"],
    ]);
    // plain protocol routes never get recall inserted
    const sent = env.up.requests.filter((r) => r.model === "proto");
    expect(sent.every((b) => !b.messages.some((m) => m.role === "system"))).toBe(true);
  });
});
