// Memory over 3 replicas on one PostgreSQL and Redis: what is ingested through one replica is
// searched and recalled (within the budget) through another; a session's distillation happens
// once across replicas, whether three replicas flush it at the same moment or its debounce falls
// due on all of them at once (a ManualClock shared by the three engines drives the debounce), or
// the agent's direct chat moves to another conversation on another replica.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { missingServices } from "../helpers/services";
import { scriptedProvider, type ScriptedProvider } from "../agents/scripted";
import { EXTRACTOR, extractorAnswer } from "../memory/env";
import { ManualClock } from "../../engines/memory/clock";
import { startCluster, everywhere, type Replica } from "./cluster";
import type { StandIn } from "../gateway/fixtures";

const missing = missingServices();
if (missing) console.warn(`test/scale skipped: ${missing}`);

const BUDGET = 150;

/** Poll an async condition every 50 ms until it holds (throws after timeoutMs). */
async function eventually(cond: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error("condition not reached");
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe.skipIf(!!missing)("memory across 3 replicas", () => {
  let rs: Replica[] = [];
  let stop: (() => Promise<void>) | undefined;
  let up: ScriptedProvider;
  let standin: StandIn;
  const clock = new ManualClock();

  /** extraction calls whose transcript holds `marker` */
  const extractions = (marker: string) => up.requests.filter((r) => r.model === EXTRACTOR && JSON.stringify(r.messages).includes(marker));
  const idle = () => Promise.all(rs.map((r) => r.svc.svc.engines.memory!.idle()));
  const distillations = async (r: Replica, conv: string) =>
    (await r.api("GET", "/memory/runs?agent_id=keeper&type=distillation")).json.data.filter((x: any) => x.result.conversation_id === conv);

  beforeAll(async () => {
    up = await scriptedProvider();
    up.script(EXTRACTOR, (b) => ({ text: extractorAnswer(b) }));
    up.script("keeper", () => ({ text: "noted" }));
    ({ rs, stop, up: standin } = await startCluster(3));
    const models = [EXTRACTOR, "keeper"].map((name) => ({ name, inputPerMillion: 1, outputPerMillion: 2 }));
    await rs[0].svc.svc.store.write([
      { op: "upsert", kind: "Provider", name: "scripted", owner: "config:test", spec: { type: "openai", baseUrl: up.baseUrl, timeoutSeconds: 10, models } },
      { op: "upsert", kind: "MemoryConfig", name: "memory", owner: "config:test", spec: { extractionModel: EXTRACTOR, memoryBudgetTokens: BUDGET } },
      { op: "upsert", kind: "Agent", name: "keeper", owner: "config:test", spec: { instructions: "You are keeper.", defaultModel: "keeper", memory: true, maxIterations: 2 } },
    ]);
    await everywhere(rs, "Agent", "keeper");
    await everywhere(rs, "MemoryConfig", "memory");
    await everywhere(rs, "Provider", "scripted");
    for (const r of rs) r.svc.svc.engines.memory!.useClock(clock);
  }, 120_000);

  afterAll(async () => {
    await stop?.();
    await up?.close();
  }, 180_000);

  it("ingested and distilled through replica 1: replica 2 finds the fact and recalls it into a run within the budget", async () => {
    const ing = await rs[0].api("POST", "/memory/ingest", {
      agent_id: "keeper", conversation_id: "light", flush: true,
      turns: [{ user: "remember that the lighthouse is painted red and white", assistant: "Noted." }, { user: "my name is Ines", assistant: "Hello Ines." }],
    });
    expect(ing.status).toBe(200);
    expect(ing.json).toMatchObject({ outcome: "distilled", turns: { stored: 2 }, distillation: { facts_new: 1 } });

    const facts = await rs[1].api("GET", "/memory/search?agent_id=keeper&kind=facts&q=lighthouse%20colour");
    expect(facts.status).toBe(200);
    expect(facts.json).toMatchObject({ recall: "lexical", data: [{ kind: "fact", text: "The lighthouse is painted red and white.", status: "candidate" }] });
    expect(facts.json.data[0].lexical).toBeGreaterThanOrEqual(0); // BM25 over this small namespace: near 0
    expect(facts.json.data[0].lexical).toBeLessThanOrEqual(1);
    const transcript = await rs[2].api("GET", "/memory/search?agent_id=keeper&kind=transcript&q=lighthouse");
    expect(transcript.json.data.map((h: any) => h.text)).toEqual([expect.stringContaining("lighthouse is painted red")]);
    const status = await rs[2].api("GET", "/memory/status?agent_id=keeper");
    expect(status.json).toMatchObject({ counts: { candidates: 1, episodes: 1, transcript: 2, pending: 0 }, identity: [{ key: "user_name", value: "Ines" }] });

    const preview = await rs[1].api("GET", "/memory/recall?agent_id=keeper&q=what%20colour%20is%20the%20lighthouse");
    expect(preview.json.budget_tokens).toBe(BUDGET);
    expect(preview.json.tokens).toBeLessThanOrEqual(BUDGET);
    expect(preview.json.items.map((i: any) => i.kind)).toEqual(expect.arrayContaining(["identity", "fact"]));

    const run = await rs[1].api("POST", "/agents/keeper/run", { prompt: "What colour is the lighthouse?", conversation_id: "ask" });
    expect(run.status).toBe(200);
    expect(run.json.memory).toMatchObject({ budget: BUDGET });
    expect(run.json.memory.recalled).toBeGreaterThan(0);
    expect(run.json.memory.tokens).toBeLessThanOrEqual(BUDGET);
    const sent = up.requests.filter((r) => r.model === "keeper").at(-1)!;
    expect(sent.messages.filter((m) => m.role === "system").map((m) => m.content).join("\n")).toContain("The lighthouse is painted red and white.");
  });

  it("three replicas flushing one session at once distill it once", async () => {
    const turns = [{ user: "remember that the ferry leaves at noon [flushrace]", assistant: "Noted." }];
    expect((await rs[0].api("POST", "/memory/ingest", { agent_id: "keeper", conversation_id: "race", turns })).json.outcome).toBe("buffered");
    const flushed = await Promise.all(rs.map((r) => r.api("POST", "/memory/flush", { agent_id: "keeper", conversation_id: "race" })));
    const outcomes = flushed.map((f) => f.json.sessions[0].outcome).sort();
    expect(outcomes).toEqual(["distilled", "skipped:nothing_pending", "skipped:nothing_pending"]);
    await idle();
    expect(extractions("[flushrace]")).toHaveLength(1);
    expect(await distillations(rs[2], "race")).toHaveLength(1);
    const hits = await rs[2].api("GET", "/memory/search?agent_id=keeper&kind=facts&q=ferry");
    expect(hits.json.data.map((h: any) => h.text)).toEqual(["The ferry leaves at noon [flushrace]."]);
  });

  it("a debounce armed by turns on every replica falls due once: one distillation for the cluster", async () => {
    for (const [i, r] of rs.entries()) {
      const turns = [{ user: `remember that tide table ${i} is pinned to the wall [deb]`, assistant: "Noted." }];
      expect((await r.api("POST", "/memory/ingest", { agent_id: "keeper", conversation_id: "tides", turns })).json.outcome).toBe("buffered");
    }
    expect(extractions("[deb]")).toHaveLength(0);
    clock.advance(61_000); // the default debounce is 60 s
    await eventually(async () => (await distillations(rs[0], "tides")).length > 0, 15_000);
    await idle();
    expect(extractions("[deb]")).toHaveLength(1);
    expect(JSON.stringify(extractions("[deb]")[0].messages)).toContain("tide table 2");
    const runs = await distillations(rs[1], "tides");
    expect(runs).toMatchObject([{ trigger: "debounce", result: { outcome: "distilled", signals: 3 } }]);
    const hits = await rs[1].api("GET", "/memory/search?agent_id=keeper&kind=facts&q=tide%20table");
    expect(hits.json.data).toHaveLength(3);
  });

  it("a direct chat moving to another conversation on another replica distills the previous one at once, once", async () => {
    const chat = async (r: Replica, conv: string, prompt: string) => {
      const run = await r.api("POST", "/agents/keeper/run", { prompt, conversation_id: conv });
      expect(run.status).toBe(200);
      await idle(); // its turn is buffered once the run answered
    };
    await chat(rs[0], "switch-a", "remember that the pier lamp is green [switchA]");
    await chat(rs[0], "switch-a", "remember that the pier bench is oak [switchA]");
    expect(extractions("[switchA]")).toHaveLength(0); // waiting on its debounce (60 s)
    await chat(rs[1], "switch-b", "what about the pier? [switchB]");
    // no clock advance: replica 2 saw the conversation change and distilled A
    const runs = await distillations(rs[2], "switch-a");
    expect(runs).toMatchObject([{ trigger: "conversation_switch", result: { outcome: "distilled", signals: 2 } }]);
    expect(extractions("[switchA]")).toHaveLength(1);
    expect(extractions("[switchB]")).toHaveLength(0); // B is the current conversation: it waits
    const hits = await rs[2].api("GET", "/memory/search?agent_id=keeper&kind=facts&q=pier");
    expect(hits.json.data.map((h: any) => h.text).sort()).toEqual(["The pier bench is oak [switchA].", "The pier lamp is green [switchA]."]);
    // A's debounce was dropped with it: when B's falls due, A is not distilled again
    clock.advance(61_000);
    await eventually(async () => (await distillations(rs[0], "switch-b")).length > 0, 15_000);
    await idle();
    expect(extractions("[switchA]")).toHaveLength(1);
    expect(extractions("[switchB]")).toHaveLength(1);
    expect(await distillations(rs[1], "switch-a")).toHaveLength(1);
  });

  it("index operations through one replica are seen by the others", async () => {
    const before = (await rs[0].api("GET", "/memory/search?agent_id=keeper&kind=all&q=lighthouse")).json.data;
    expect(before.length).toBeGreaterThan(0);
    expect((await rs[1].api("DELETE", "/memory/agents/keeper/index")).status).toBe(200);
    expect((await rs[2].api("GET", "/memory/search?agent_id=keeper&kind=all&q=lighthouse")).json.data).toEqual([]);
    const rebuilt = await rs[2].api("POST", "/memory/agents/keeper/index/rebuild");
    expect(rebuilt.json.result).toMatchObject({ op: "rebuild_index" });
    expect((await rs[0].api("GET", "/memory/search?agent_id=keeper&kind=all&q=lighthouse")).json.data).toEqual(before);
    const cons = await rs[1].api("POST", "/memory/consolidate", { agent_id: "keeper" });
    expect(cons.json.data).toMatchObject([{ type: "consolidation", agent_id: "keeper" }]);
  });

  it("with an embedding model, vectors written through one replica rank hybrid hits on another", async () => {
    await rs[0].svc.svc.store.write([
      { op: "upsert", kind: "Provider", name: "embedder", owner: "config:test", spec: { type: "openai", baseUrl: standin.baseUrl, timeoutSeconds: 5, models: [{ name: "emb", inputPerMillion: 0, outputPerMillion: 0 }] } },
      { op: "upsert", kind: "MemoryConfig", name: "memory", owner: "config:test", spec: { extractionModel: EXTRACTOR, memoryBudgetTokens: BUDGET, embeddingModel: "emb" } },
    ]);
    await everywhere(rs, "MemoryConfig", "memory", (spec) => spec.embeddingModel === "emb");
    await everywhere(rs, "Provider", "embedder");
    const ing = await rs[0].api("POST", "/memory/ingest", { agent_id: "keeper", conversation_id: "vec", flush: true, turns: [{ user: "remember that the harbour crane is yellow", assistant: "Noted." }] });
    expect(ing.json.outcome).toBe("distilled");
    await idle(); // vectors are written in the background
    const st = (await rs[1].api("GET", "/memory/status?agent_id=keeper")).json;
    expect(st.recall).toBe("hybrid");
    expect(st.index.vectors).toBe(3); // the turn, the episode and the fact of this session
    const hits = await rs[2].api("GET", "/memory/search?agent_id=keeper&kind=facts&q=harbour%20crane");
    expect(hits.json.recall).toBe("hybrid");
    expect(hits.json.data[0]).toMatchObject({ text: "The harbour crane is yellow." });
    expect(hits.json.data[0].vector).not.toBeNull();
    expect(hits.json.data[0].lexical).toBeGreaterThan(0);
  });
});
