// Consolidation, step by step, each visible in its recorded run: decay (salience halves in 30
// days), merge of near-duplicate episodes, promotion of facts supported twice, eviction below
// salienceFloor only when idle, pruning past episodeRetentionDays; on demand and on the interval.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { startMemEnv, type MemEnv } from "./env";

let env: MemEnv;
const DAY = 86_400_000;
const consolidate = async () => (await env.api("POST", "/memory/consolidate", { agent_id: "keeper" })).json.data[0];
const episodes = async () => (await env.api("GET", "/memory/search?agent_id=keeper&kind=episodes&limit=100")).json.data;
const ids: Record<string, number> = {};

beforeAll(async () => {
  env = await startMemEnv(["keeper"]);
  await env.memoryConfig({ summaryDebounceSeconds: 10, consolidationIntervalHours: 24, salienceFloor: 0.3, episodeRetentionDays: 365 });
  await env.agent("keeper");
  const ing = async (conv: string, user: string, assistant = "Noted.", extra: Record<string, unknown> = {}) => {
    const r = await env.ingest({ agent_id: "keeper", conversation_id: conv, turns: [{ user, assistant }], flush: true, ...extra });
    return r.json;
  };
  ids.e1 = (await ing("k1", "remember that coffee is best black")).distillation.episode_id;
  ids.e2 = (await ing("k2", "remember that coffee is best black", "Noted again.")).distillation.episode_id; // same session content: near-duplicate
  ids.low = (await ing("k3", "[salience=0.1] small talk about weather")).distillation.episode_id;
  await ing("k4", "an old conversation about sailing", "Nice.", { session_date: "2024-06-01T10:00:00Z", skip_extraction: true });
}, 60_000);
afterAll(async () => {
  await env?.stop();
});

describe("consolidation", () => {
  it("on demand right after activity: merges, promotes and prunes, but does not evict (not idle)", async () => {
    const run = await consolidate();
    expect(run).toMatchObject({ object: "memory.run", type: "consolidation", trigger: "on_demand", agent_id: "keeper" });
    const r = run.result;
    expect(r.merge).toEqual([{ into: ids.e1, merged: ids.e2, similarity: 1 }]);
    const facts = (await env.api("GET", "/memory/search?agent_id=keeper&kind=facts")).json.data;
    expect(facts).toMatchObject([{ text: "Coffee is best black.", status: "pinned" }]);
    expect(r.promote).toEqual([facts[0].id]);
    expect(r.evict).toEqual({ idle: false, episodes: [], facts: [] });
    expect(r.prune).toMatchObject({ transcript: 1, episodes: 0 });
    expect(r.decay).toMatchObject({ episodes: 0 });
    const eps = await episodes();
    expect(eps.map((e: any) => e.id).sort()).toEqual([ids.e1, ids.low].sort());
    expect((await env.api("GET", "/memory/search?agent_id=keeper&kind=transcript&q=sailing")).json.data).toEqual([]);
  });

  it("on the interval, once idle: salience decays (half in 30 days) and what fell below the floor is evicted; pinned facts stay", async () => {
    const before = (await env.api("GET", "/memory/runs?agent_id=keeper&type=consolidation")).json.data.length;
    await env.advance(30 * DAY);
    const runs = (await env.api("GET", "/memory/runs?agent_id=keeper&type=consolidation&limit=100")).json.data;
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
    const facts = (await env.api("GET", "/memory/search?agent_id=keeper&kind=facts")).json.data;
    expect(facts).toMatchObject([{ status: "pinned", salience: 0.8 }]);
  });

  it("prunes episodes past the retention", async () => {
    await env.memoryConfig({ episodeRetentionDays: 10, summaryDebounceSeconds: 10, salienceFloor: 0 });
    const run = await consolidate();
    expect(run.result.prune).toMatchObject({ episodes: 1 });
    expect(await episodes()).toEqual([]);
  });
});
