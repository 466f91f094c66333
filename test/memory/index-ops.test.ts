// Index operations are distinct and never widen scope: removing an agent's index leaves its
// records (and every other agent) alone, a rebuild restores exactly what search returned before
// the removal, a purge deletes one namespace. With an embedding model, recall is hybrid and the
// vectors are part of the index (removed and rebuilt with it).
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { startMemEnv, type MemEnv } from "./env";
import { standIn, type StandIn } from "../gateway/fixtures";

let env: MemEnv;
let emb: StandIn;
const QUERIES = ["coffee", "garden tomatoes", "meeting tuesday", "remember"];
const snapshot = async (agent: string) => {
  const out: unknown[] = [];
  for (const q of QUERIES) for (const kind of ["facts", "episodes", "transcript", "all"]) out.push((await env.api("GET", `/memory/search?agent_id=${agent}&kind=${kind}&q=${encodeURIComponent(q)}`)).json.data);
  return out;
};

beforeAll(async () => {
  env = await startMemEnv(["idx", "other"]);
  emb = await standIn();
  await env.apply([{ kind: "Provider", name: "embedder", spec: { type: "openai", baseUrl: emb.baseUrl, timeoutSeconds: 5, models: [{ name: "emb", inputPerMillion: 0, outputPerMillion: 0 }] } }]);
  await env.memoryConfig({ embeddingModel: "emb" });
  await env.agent("idx");
  await env.agent("other");
  const ing = (agent: string, conv: string, users: string[]) => env.ingest({ agent_id: agent, conversation_id: conv, turns: users.map((user) => ({ user, assistant: "Sure." })), flush: true });
  await ing("idx", "i1", ["remember that coffee is best black", "remember that the garden has tomatoes"]);
  await ing("idx", "i2", ["remember that the meeting is on tuesday", "coffee again please"]);
  await ing("other", "o1", ["remember that coffee is for the other agent", "garden tomatoes elsewhere"]);
  await env.mem.idle(); // embeddings are written in the background
}, 60_000);
afterAll(async () => {
  await env?.stop();
  await emb?.close();
});

describe("index operations", () => {
  it("with an embedding model, search is hybrid and every record has a vector", async () => {
    const st = (await env.api("GET", "/memory/status?agent_id=idx")).json;
    expect(st.recall).toBe("hybrid");
    expect(st.index.vectors).toBe(st.index.fact + st.index.episode + st.index.transcript);
    const s = await env.api("GET", "/memory/search?agent_id=idx&q=coffee");
    expect(s.json.recall).toBe("hybrid");
    expect(s.json.data[0].vector).not.toBeNull();
  });

  it("remove, then rebuild: search returns exactly what it did before; other agents never change", async () => {
    const before = await snapshot("idx");
    const otherBefore = await snapshot("other");
    const statusBefore = (await env.api("GET", "/memory/status?agent_id=idx")).json;
    expect(JSON.stringify(before)).toContain("coffee");

    const rm = await env.api("DELETE", "/memory/agents/idx/index");
    expect(rm.json).toMatchObject({ object: "memory.run", type: "index", trigger: "remove_index", agent_id: "idx" });
    expect(rm.json.result.lexical).toBe(statusBefore.index.fact + statusBefore.index.episode + statusBefore.index.transcript);
    const after = (await env.api("GET", "/memory/status?agent_id=idx")).json;
    expect(after.index).toEqual({ fact: 0, episode: 0, transcript: 0, vectors: 0 });
    expect(after.counts).toEqual(statusBefore.counts); // records stay
    expect((await env.api("GET", "/memory/search?agent_id=idx&q=coffee")).json.data).toEqual([]);
    expect(await snapshot("other")).toEqual(otherBefore);

    const rb = await env.api("POST", "/memory/agents/idx/index/rebuild");
    expect(rb.json.result).toMatchObject({ op: "rebuild_index", fact: statusBefore.counts.pinned + statusBefore.counts.candidates, episode: statusBefore.counts.episodes, transcript: statusBefore.counts.transcript, vectors: statusBefore.index.vectors });
    expect((await env.api("GET", "/memory/status?agent_id=idx")).json.index).toEqual(statusBefore.index);
    expect(await snapshot("idx")).toEqual(before);
    expect(await snapshot("other")).toEqual(otherBefore);
  });

  it("purge deletes one agent's namespace (confirmation required); the other agent keeps everything", async () => {
    const otherBefore = await snapshot("other");
    expect((await env.api("DELETE", "/memory/agents/idx")).status).toBe(409);
    const p = await env.api("DELETE", "/memory/agents/idx?confirm=true");
    expect(p.json).toMatchObject({ trigger: "purge", result: { op: "purge" } });
    expect(p.json.result.records.transcript).toBe(4);
    const st = (await env.api("GET", "/memory/status?agent_id=idx")).json;
    expect(Object.values(st.counts).every((n) => n === 0)).toBe(true);
    expect(st.index).toEqual({ fact: 0, episode: 0, transcript: 0, vectors: 0 });
    expect(await snapshot("other")).toEqual(otherBefore);
    // the operations are recorded
    const runs = (await env.api("GET", "/memory/runs?agent_id=idx&type=index")).json.data.map((r: any) => r.trigger);
    expect(runs).toEqual(["purge", "rebuild_index", "remove_index"]);
  });
});
