// Consolidation, step by step, each visible in its recorded run: decay (salience halves in 30
// days), merge of near-duplicate episodes, promotion of facts supported twice, eviction below
// salienceFloor only when idle, pruning past episodeRetentionDays; on demand and on the interval.
// The same body runs on the embedded SQLite store and on PostgreSQL shared by two replicas, where
// material is ingested and consolidated through one replica and searched and recalled through
// the other (stores.ts).
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { STORES, type MemStore } from "./stores";

const DAY = 86_400_000;

describe.each(STORES)("consolidation on $name", ({ name, missing, start }) => {
  if (missing) console.warn(`consolidation on ${name} skipped: ${missing}`);
  let st: MemStore;
  const write = (method: string, p: string, body?: unknown) => st.on(0).api(method, p, body);
  const read = (p: string) => st.on(1).api("GET", p);
  const consolidate = async () => (await write("POST", "/memory/consolidate", { agent_id: "keeper" })).json.data[0];
  const episodes = async () => (await read("/memory/search?agent_id=keeper&kind=episodes&limit=100")).json.data;
  const ids: Record<string, number> = {};

  beforeAll(async () => {
    if (missing) return;
    st = await start(["keeper"]);
    await st.memoryConfig({ summaryDebounceSeconds: 10, consolidationIntervalHours: 24, salienceFloor: 0.3, episodeRetentionDays: 365 });
    await st.agent("keeper");
    const ing = async (conv: string, user: string, assistant = "Noted.", extra: Record<string, unknown> = {}) => {
      const r = await write("POST", "/memory/ingest", { agent_id: "keeper", conversation_id: conv, turns: [{ user, assistant }], flush: true, ...extra });
      return r.json;
    };
    ids.e1 = (await ing("k1", "remember that coffee is best black")).distillation.episode_id;
    ids.e2 = (await ing("k2", "remember that coffee is best black", "Noted again.")).distillation.episode_id; // same session content: near-duplicate
    ids.low = (await ing("k3", "[salience=0.1] small talk about weather")).distillation.episode_id;
    await ing("k4", "an old conversation about sailing", "Nice.", { session_date: "2024-06-01T10:00:00Z", skip_extraction: true });
  }, 120_000);
  afterAll(async () => {
    await st?.stop();
  }, 120_000);

  it.skipIf(!!missing)("on demand right after activity: merges, promotes and prunes, but does not evict (not idle)", async () => {
    const run = await consolidate();
    expect(run).toMatchObject({ object: "memory.run", type: "consolidation", trigger: "on_demand", agent_id: "keeper" });
    const r = run.result;
    expect(r.merge).toEqual([{ into: ids.e1, merged: ids.e2, similarity: 1 }]);
    const facts = (await read("/memory/search?agent_id=keeper&kind=facts")).json.data;
    expect(facts).toMatchObject([{ text: "Coffee is best black.", status: "pinned" }]);
    expect(r.promote).toEqual([facts[0].id]);
    expect(r.evict).toEqual({ idle: false, episodes: [], facts: [] });
    expect(r.prune).toMatchObject({ transcript: 1, episodes: 0 });
    expect(r.decay).toMatchObject({ episodes: 0 });
    const eps = await episodes();
    expect(eps.map((e: any) => e.id).sort()).toEqual([ids.e1, ids.low].sort());
    expect((await read("/memory/search?agent_id=keeper&kind=transcript&q=sailing")).json.data).toEqual([]);
    // what a run would recall: the pinned fact and the one episode the duplicates merged into
    const recall = (await read("/memory/recall?agent_id=keeper&q=coffee%20black")).json;
    expect(recall.items).toEqual(expect.arrayContaining([{ kind: "fact", id: facts[0].id, text: "Coffee is best black." }]));
    expect(recall.items.filter((i: any) => i.kind === "episode").map((i: any) => i.id)).toEqual([ids.e1]);
  });

  it.skipIf(!!missing)("on the interval, once idle: salience decays (half in 30 days) and what fell below the floor is evicted; pinned facts stay", async () => {
    const before = (await read("/memory/runs?agent_id=keeper&type=consolidation")).json.data.length;
    for (let d = 0; d < 30; d++) await st.advance(DAY);
    const runs = (await read("/memory/runs?agent_id=keeper&type=consolidation&limit=100")).json.data;
    const interval = runs.slice(0, runs.length - before);
    expect(interval).toHaveLength(30);
    expect(interval.every((r: any) => r.trigger === "interval")).toBe(true);
    const first = interval[interval.length - 1].result;
    expect(first.decay.episodes).toBe(2);
    expect(first.evict.idle).toBe(true);
    expect(first.evict.episodes).toEqual([ids.low]); // 0.1 * decay < 0.3
    const eps = await episodes();
    expect(eps.map((e: any) => e.id)).toEqual([ids.e1]);
    expect(eps[0].salience).toBeCloseTo(0.4, 3); // 0.8 halved over 30 days, across 30 runs
    const facts = (await read("/memory/search?agent_id=keeper&kind=facts")).json.data;
    expect(facts).toMatchObject([{ status: "pinned", salience: 0.8 }]);
  });

  it.skipIf(!!missing)("prunes episodes past the retention", async () => {
    await st.memoryConfig({ episodeRetentionDays: 10, summaryDebounceSeconds: 10, salienceFloor: 0 });
    const run = await consolidate();
    expect(run.result.prune).toMatchObject({ episodes: 1 });
    expect(await episodes()).toEqual([]);
    expect((await read("/memory/recall?agent_id=keeper&q=coffee%20black")).json.items.filter((i: any) => i.kind === "episode")).toEqual([]);
  });
});
