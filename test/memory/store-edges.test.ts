// Edges of the memory stores, on both (stores.ts): exact-match search on words the
// query builder used to drop (longer than 64 characters; a dotted capital I), two facts that
// differ only in a long word, a fact repeated within one session, and retention counted from an
// ingested session_date for episodes as for transcript turns.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { STORES, type MemStore } from "./stores";

const DAY = 86_400_000;

describe.each(STORES)("memory store edges on $name", ({ name, missing, start }) => {
  if (missing) console.warn(`memory store edges on ${name} skipped: ${missing}`);
  let st: MemStore;
  const write = (method: string, p: string, body?: unknown) => st.on(0).api(method, p, body);
  const read = (p: string) => st.on(1).api("GET", p);
  const ingest = (agent: string, conv: string, users: string[], extra: Record<string, unknown> = {}) =>
    write("POST", "/memory/ingest", { agent_id: agent, conversation_id: conv, turns: users.map((user) => ({ user, assistant: "Noted." })), ...extra });

  beforeAll(async () => {
    if (missing) return;
    st = await start(["rlex", "rfact", "rret"]);
    for (const a of ["rlex", "rfact", "rret"]) await st.agent(a);
  }, 120_000);
  afterAll(async () => {
    await st?.stop();
  }, 120_000);

  it.skipIf(!!missing)("search finds a word longer than 64 letters or digits (a token, a hash) by itself", async () => {
    const tok = "a1b2c3d4".repeat(12); // 96 characters
    await ingest("rlex", "l1", [`the deploy token is ${tok}`], { skip_extraction: true });
    await ingest("rlex", "l2", ["the deploy went fine"], { skip_extraction: true });
    const hits = (await read(`/memory/search?agent_id=rlex&kind=transcript&q=${tok}`)).json.data;
    expect(hits).toHaveLength(1);
    expect(hits[0].text).toContain(tok);
  });

  it.skipIf(!!missing)("search finds a word with a dotted capital I (Turkish)", async () => {
    await ingest("rlex", "l3", ["we flew to İzmir last spring"], { skip_extraction: true });
    const hits = (await read(`/memory/search?agent_id=rlex&kind=transcript&q=${encodeURIComponent("İzmir")}`)).json.data;
    expect(hits).toHaveLength(1);
    expect(hits[0].text).toContain("İzmir");
  });

  it.skipIf(!!missing)("two facts that differ only in a long word are two facts", async () => {
    const a = "f00d".repeat(20);
    const b = "beef".repeat(20);
    expect((await ingest("rfact", "f1", [`remember that the staging key is ${a}`], { flush: true })).json.outcome).toBe("distilled");
    const r = await ingest("rfact", "f2", [`remember that the staging key is ${b}`], { flush: true });
    expect(r.json.distillation).toMatchObject({ facts_new: 1, facts_supported: 0 });
    const texts = (await read("/memory/search?agent_id=rfact&kind=facts&limit=100")).json.data.map((f: any) => f.text).sort();
    expect(texts).toEqual([`The staging key is ${a}.`, `The staging key is ${b}.`].sort());
  });

  it.skipIf(!!missing)("a fact said twice in one session is one session's support: consolidation does not pin it", async () => {
    const r = await ingest("rfact", "f3", ["remember that the boat is blue", "Remember that THE BOAT is blue"], { flush: true });
    expect(r.json.distillation).toMatchObject({ facts_new: 1, facts_supported: 0 });
    const run = (await write("POST", "/memory/consolidate", { agent_id: "rfact" })).json.data[0];
    expect(run.result.promote).toEqual([]);
    const boat = (await read("/memory/search?agent_id=rfact&kind=facts&q=boat")).json.data;
    expect(boat).toMatchObject([{ text: "The boat is blue.", status: "candidate" }]);
  });

  it.skipIf(!!missing)("retention counts from an ingested session_date for the episode, as for its transcript", async () => {
    const old = new Date(Date.now() - 3 * 365 * DAY).toISOString().slice(0, 10); // beyond 365 days on either clock
    const r = await ingest("rret", "r1", ["an old conversation about sailing"], { flush: true, session_date: old });
    const ep = r.json.distillation.episode_id;
    await ingest("rret", "r2", ["a recent conversation about rowing"], { flush: true });
    const run = (await write("POST", "/memory/consolidate", { agent_id: "rret" })).json.data[0];
    expect(run.result.prune).toMatchObject({ transcript: 1, episodes: 1 });
    const eps = (await read("/memory/search?agent_id=rret&kind=episodes&limit=100")).json.data;
    expect(eps.map((e: any) => e.id)).not.toContain(ep);
    expect(eps).toHaveLength(1);
  });
});
