// Edges of distillation (embedded store; store-edges.test.ts has those of both stores): a
// purge racing a running distillation or a background embedding, new facts' vectors, and vectors
// of another embedding model (other dimensions).
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { startMemEnv, type MemEnv } from "./env";

let env: MemEnv;
beforeAll(async () => {
  env = await startMemEnv(["pur", "pve", "vec", "dim"]);
  // an embeddings provider exists so the MemoryConfig below is Ready; calls.embed is replaced per test
  await env.apply([{ kind: "Provider", name: "embedder", spec: { type: "openai", baseUrl: "http://127.0.0.1:9/v1", timeoutSeconds: 5, models: [{ name: "emb", inputPerMillion: 0, outputPerMillion: 0 }] } }]);
  for (const a of ["pur", "pve", "vec", "dim"]) await env.agent(a);
}, 60_000);
afterAll(async () => {
  await env?.stop();
});

const turn = (user: string, assistant = "Noted.") => ({ user, assistant });

describe("purge while a distillation runs", () => {
  it("leaves nothing of the purged agent behind", async () => {
    const calls = env.mem.calls;
    const orig = calls.chat.bind(calls);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    calls.chat = async (req) => {
      entered();
      await gate; // the extraction call is slow: the purge lands meanwhile
      return orig(req);
    };
    try {
      const ing = env.ingest({ agent_id: "pur", conversation_id: "p1", turns: [turn("remember that the vault code is 9931")], flush: true });
      await inside;
      const p = await env.api("DELETE", "/memory/agents/pur?confirm=true");
      expect(p.status).toBe(200);
      release();
      expect((await ing).status).toBe(200);
      await env.mem.idle();
    } finally {
      calls.chat = orig;
    }
    const st = (await env.api("GET", "/memory/status?agent_id=pur")).json;
    expect(st.counts).toMatchObject({ pinned: 0, candidates: 0, episodes: 0, transcript: 0, pending: 0, dead_letters: 0, entities: 0, identity: 0 });
    expect(st.index).toEqual({ fact: 0, episode: 0, transcript: 0, vectors: 0 });
    expect((await env.api("GET", "/memory/search?agent_id=pur&q=vault code")).json.data).toEqual([]);
  });
});

describe("purge while an embedding runs", () => {
  it("leaves no vector of the purged agent behind", async () => {
    const calls = env.mem.calls;
    const orig = calls.embed.bind(calls);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    calls.embed = async (_m, input) => {
      entered();
      await gate; // the embedding call is slow: the purge lands meanwhile
      return input.map(() => Float32Array.from([1, 0, 0, 0]));
    };
    await env.memoryConfig({ embeddingModel: "emb" });
    try {
      await env.ingest({ agent_id: "pve", conversation_id: "e1", turns: [turn("the lighthouse keeper waves")], skip_extraction: true });
      await inside;
      expect((await env.api("DELETE", "/memory/agents/pve?confirm=true")).status).toBe(200);
      release();
      await env.mem.idle();
    } finally {
      calls.embed = orig;
      await env.memoryConfig({});
    }
    expect((await env.api("GET", "/memory/status?agent_id=pve")).json.index).toEqual({ fact: 0, episode: 0, transcript: 0, vectors: 0 });
  });
});

/** A deterministic embedding: one dimension per topic word. */
const TOPICS = ["tea", "dog", "boat", "piano"];
const vecOf = (text: string, dims = 4) => {
  const v = new Float32Array(dims);
  TOPICS.forEach((w, i) => {
    if (text.toLowerCase().includes(w)) v[i % dims] = 1;
  });
  if (!v.some((x) => x)) v[dims - 1] = 0.01;
  return v;
};

describe("embeddings", () => {
  it("a new fact's vector is its own text's, even when another fact of the same extraction was already known", async () => {
    const calls = env.mem.calls;
    const orig = calls.embed.bind(calls);
    const embedded: string[] = [];
    calls.embed = async (_m, input) => (embedded.push(...input), input.map((t) => vecOf(t)));
    await env.memoryConfig({ embeddingModel: "emb" });
    try {
      await env.ingest({ agent_id: "vec", conversation_id: "v1", turns: [turn("remember that I like tea")], flush: true });
      await env.mem.idle();
      embedded.length = 0;
      // the first fact is known (support), the second is new
      await env.ingest({ agent_id: "vec", conversation_id: "v2", turns: [turn("remember that I like tea"), turn("remember that my dog is Rex")], flush: true });
      await env.mem.idle();
      const facts = (await env.api("GET", "/memory/search?agent_id=vec&kind=facts")).json.data;
      const rex = facts.find((f: any) => /Rex/.test(f.text));
      expect(rex).toBeTruthy();
      const v = env.mem.index.vectors("vec")!;
      const i = v.refs.findIndex((ref, j) => ref === rex.id && v.kinds[j] === "fact");
      expect(i).toBeGreaterThanOrEqual(0);
      expect([...v.vecs[i]]).toEqual([...vecOf(rex.text)]);
    } finally {
      calls.embed = orig;
      await env.memoryConfig({});
    }
  });

  it("after the embedding model changes dimensions, the old vectors do not score: an exact lexical match ranks first", async () => {
    const calls = env.mem.calls;
    const orig = calls.embed.bind(calls);
    let dims = 4;
    calls.embed = async (_m, input) => input.map((t) => vecOf(t, dims));
    await env.memoryConfig({ embeddingModel: "emb" });
    try {
      // old vectors, 4 dimensions; "piano" and "dog" land on different axes
      await env.ingest({ agent_id: "dim", conversation_id: "m1", turns: [turn("the piano is out of tune"), turn("my dog sleeps a lot"), turn("quartz watches are precise")], skip_extraction: true });
      await env.mem.idle();
      // a new model of 2 dimensions: "dog" (axis 1) and "piano" (axis 3 -> 1) now collide, and the
      // old 4-dimension vectors would be compared over their first two numbers only
      dims = 2;
      const hits = (await env.api("GET", "/memory/search?agent_id=dim&kind=transcript&q=quartz")).json.data;
      expect(hits[0].text).toContain("quartz");
      expect(hits.map((h: any) => h.text).filter((t: string) => !t.includes("quartz"))).toEqual([]);
    } finally {
      calls.embed = orig;
      await env.memoryConfig({});
    }
  });
});
