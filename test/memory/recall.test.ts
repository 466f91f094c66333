// Recall: at most memoryBudgetTokens tokens (exactly filled: nothing left out would fit), only into
// runs of Agents with memory on, scoped per agent (A never sees B's memory, by recall, search or
// the svc_memory_search tool), and an agent run whose answer uses a recalled fact.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { startMemEnv, type MemEnv } from "./env";
import { lastTool, turnOf, type ChatBody } from "../agents/scripted";
import { estimateTextTokens } from "../../engines/providers/estimate";
import { hitLine, RECALL_HEADER } from "../../engines/memory/recall";
import { pollTask } from "../helpers/tasks";

let env: MemEnv;
const systems = (b: ChatBody) => b.messages.filter((m) => m.role === "system").map((m) => m.content ?? "");

beforeAll(async () => {
  env = await startMemEnv(["alice", "bob", "plain", "searcher", "denier"]);
  // answers from what the memory system message says about the dog, if anything
  env.up.script("alice", (b) => {
    const mem = systems(b).find((s) => s.startsWith(RECALL_HEADER)) ?? "";
    const dog = /dog is called (\w+)/i.exec(mem)?.[1];
    return { text: dog ? `Your dog is called ${dog}.` : "I do not know your dog's name." };
  });
  env.up.script("bob", () => ({ text: "bob here" }));
  env.up.script("plain", () => ({ text: "plain here" }));
  env.up.script("denier", () => ({ text: "denier here" }));
  env.up.script("searcher", (b) => (turnOf(b) === 0 ? { calls: [{ name: "svc_memory_search", args: { query: "secret code" } }] } : { text: `found: ${lastTool(b)}` }));
  await env.memoryConfig({ memoryBudgetTokens: 100 });
  await env.agent("alice");
  await env.agent("bob");
  await env.agent("searcher");
  await env.agent("plain", { memory: false });
  await env.agent("denier", { toolPolicy: { allow: [], deny: ["svc_memory_*"] } });
  const ing = (agent: string, conv: string, user: string) => env.ingest({ agent_id: agent, conversation_id: conv, turns: [{ user, assistant: "Noted." }], flush: true });
  expect((await ing("alice", "a1", "remember that my dog is called Rex")).json.outcome).toBe("distilled");
  expect((await ing("bob", "b1", "remember that the secret code is 4242")).json.outcome).toBe("distilled");
  expect((await ing("bob", "b2", "remember that my dog is called Fido")).json.outcome).toBe("distilled");
  expect((await ing("searcher", "s1", "remember that the secret code is 1111")).json.outcome).toBe("distilled");
}, 60_000);
afterAll(async () => {
  await env?.stop();
});

describe("recall into agent runs", () => {
  it("an agent run's answer uses a recalled fact", async () => {
    const before = env.up.requests.length;
    const r = await env.api("POST", "/agents/alice/run", { prompt: "What is my dog called?" });
    expect(r.json.output).toBe("Your dog is called Rex.");
    expect(r.json.memory.recalled).toBeGreaterThan(0);
    const sent = env.up.requests.slice(before).find((x) => x.model === "alice")!;
    expect(systems(sent)[0]).toBe("You are alice."); // instructions first, memory second
    expect(systems(sent)[1]).toContain("Rex");
  });

  it("a detached task's answer uses a recalled fact too", async () => {
    const before = env.up.requests.length;
    const d = await env.api("POST", "/agents/alice/dispatch", { prompt: "What is my dog called?" });
    expect(d.status).toBe(202);
    const t = await pollTask(env, d.json.id, (t) => t.status !== "queued" && t.status !== "running");
    expect(t.status).toBe("completed");
    expect(t.result.output).toBe("Your dog is called Rex.");
    const sent = env.up.requests.slice(before).find((x) => x.model === "alice")!;
    expect(systems(sent)[1]).toContain("Rex");
  });

  it("agent scoping: alice never recalls bob's memory, and bob's search never returns alice's", async () => {
    const before = env.up.requests.length;
    await env.api("POST", "/agents/alice/run", { prompt: "what is the secret code? and the dog?" });
    const sent = env.up.requests.slice(before).find((x) => x.model === "alice")!;
    expect(systems(sent)[1]).toContain("Rex");
    expect(JSON.stringify(sent.messages)).not.toMatch(/4242|Fido/);
    const s = await env.api("GET", "/memory/search?agent_id=alice&q=secret code 4242 Fido");
    expect(s.json.data.map((h: any) => h.text).join(" ")).not.toMatch(/4242|Fido/);
    const b = await env.api("GET", "/memory/search?agent_id=bob&q=dog");
    expect(b.json.data.map((h: any) => h.text).join(" ")).not.toContain("Rex");
    expect(b.json.data.map((h: any) => h.text).join(" ")).toContain("Fido");
  });

  it("svc_memory_search reads only the calling agent's memory, and is not exposed over /mcp", async () => {
    const r = await env.api("POST", "/agents/searcher/run", { prompt: "look it up" });
    expect(r.json.output).toContain("1111");
    expect(r.json.output).not.toContain("4242");
    const tools = await env.api("GET", "/mcp/tools");
    expect(JSON.stringify(tools.json)).not.toContain("svc_memory_search");
    const call = await env.api("POST", "/mcp/call", { name: "svc_memory_search", arguments: { query: "secret code" } });
    expect(call.status).toBe(403);
    expect(call.json.error.code).toBe("tool_not_exposable");
    expect(JSON.stringify(call.json)).not.toContain("4242");
  });

  it("agents with memory are offered svc_memory_search unless their policy denies it", async () => {
    const before = env.up.requests.length;
    await env.api("POST", "/agents/alice/run", { prompt: "hi" });
    await env.api("POST", "/agents/denier/run", { prompt: "hi" });
    const tools = (model: string) => env.up.requests.slice(before).find((x) => x.model === model)!.tools!.map((t) => t.function.name);
    expect(tools("alice")).toContain("svc_memory_search");
    expect(tools("denier")).not.toContain("svc_memory_search");
  });

  it("agents with memory off get no recall", async () => {
    const before = env.up.requests.length;
    const r = await env.api("POST", "/agents/plain/run", { prompt: "my dog?" });
    expect(r.json.memory).toBeNull();
    const sent = env.up.requests.slice(before).find((x) => x.model === "plain")!;
    expect(systems(sent)).toEqual(["You are plain."]);
  });
});

describe("budget", () => {
  it("recall holds at most memoryBudgetTokens tokens and nothing it left out would still fit", async () => {
    const turns = Array.from({ length: 40 }, (_, i) => ({ user: `zebra note ${i}: ${"stripes ".repeat(i % 7 + 1)}`, assistant: "ok" }));
    await env.ingest({ agent_id: "bob", conversation_id: "zebras", turns, skip_extraction: true });
    const r = await env.api("GET", "/memory/recall?agent_id=bob&q=zebra stripes");
    expect(r.json).toMatchObject({ budget_tokens: 100, counted_with: "estimate" });
    const text: string = r.json.text;
    expect(r.json.tokens).toBe(estimateTextTokens(text));
    expect(r.json.tokens).toBeLessThanOrEqual(100);
    expect(r.json.skipped).toBeGreaterThan(0);
    const hits = (await env.mem.search("bob", ["fact", "episode", "transcript"], "zebra stripes", 30)).filter((h) => !r.json.items.some((i: any) => i.kind === h.kind && i.id === h.id));
    expect(hits.length).toBeGreaterThan(0);
    for (const h of hits) expect(estimateTextTokens(`${text}\n${hitLine(h)}`)).toBeGreaterThan(100);
  });

  it("the run's system message is the same budgeted text", async () => {
    await env.memoryConfig({ memoryBudgetTokens: 150 });
    const before = env.up.requests.length;
    const r = await env.api("POST", "/agents/bob/run", { prompt: "zebra stripes" });
    expect(r.json.memory).toMatchObject({ budget: 150 });
    expect(r.json.memory.tokens).toBeLessThanOrEqual(150);
    const sent = env.up.requests.slice(before).find((x) => x.model === "bob")!;
    expect(estimateTextTokens(systems(sent)[1])).toBe(r.json.memory.tokens);
  });
});
