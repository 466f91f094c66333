// POST /memory/ingest: one explicit outcome per call for every branch, idempotency per
// conversation and turn content, skip_extraction, and the dead letter after bounded retries.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { startMemEnv, extractorAnswer, EXTRACTOR, type MemEnv } from "./env";

let env: MemEnv;
beforeAll(async () => {
  env = await startMemEnv(["ana", "quiet", "nomodel"]);
  await env.agent("ana");
  await env.agent("quiet", { memory: false });
  await env.apply([{ kind: "Agent", name: "nomodel", spec: { instructions: "x", memory: true } }]);
}, 60_000);
afterAll(async () => {
  await env?.stop();
});

const turn = (user: string, assistant = "Noted.") => ({ user, assistant });

describe("POST /memory/ingest outcomes", () => {
  it("buffered: turns become pending signals, no extraction runs in the request", async () => {
    const before = env.extractions().length;
    const r = await env.ingest({ agent_id: "ana", conversation_id: "c-buf", turns: [turn("remember that the sky is green"), turn("and tea is hot")] });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ object: "memory.ingest", outcome: "buffered", turns: { received: 2, stored: 2, duplicate: 0, empty: 0 }, pending: 2 });
    expect(env.extractions().length).toBe(before);
    expect(env.mem.isDebouncing("ana", "c-buf")).toBe(true);
  });

  it("skipped:duplicate: the same conversation and turns again store nothing", async () => {
    const r = await env.ingest({ agent_id: "ana", conversation_id: "c-buf", turns: [turn("remember that the sky is green"), turn("and tea is hot")] });
    expect(r.json).toMatchObject({ outcome: "skipped:duplicate", turns: { stored: 0, duplicate: 2 }, pending: 2 });
    // the same turn in another conversation is a new turn
    const o = await env.ingest({ agent_id: "ana", conversation_id: "c-other", turns: [turn("and tea is hot")] });
    expect(o.json.outcome).toBe("buffered");
  });

  it("distilled: flush distills in the call, through the extraction model with a JSON schema", async () => {
    const before = env.extractions().length;
    const r = await env.ingest({ agent_id: "ana", conversation_id: "c-now", turns: [turn("remember that Paris is lovely in May")], flush: true });
    expect(r.json).toMatchObject({ outcome: "distilled", pending: 0, distillation: { facts_new: 1 } });
    // c-other was ingest's active conversation: switching to c-now distilled it too
    const calls = env.extractions().slice(before).filter((c) => JSON.stringify(c.messages).includes("Paris"));
    expect(calls).toHaveLength(1);
    expect((calls[0] as any).response_format).toMatchObject({ type: "json_schema" });
    const s = await env.api("GET", "/memory/search?agent_id=ana&kind=facts&q=Paris");
    expect(s.json.data.map((h: any) => h.text)).toEqual(["Paris is lovely in May."]);
  });

  it("skipped:empty: turns without text", async () => {
    const r = await env.ingest({ agent_id: "ana", conversation_id: "c-empty", turns: [turn("  ", "")] });
    expect(r.json).toMatchObject({ outcome: "skipped:empty", turns: { empty: 1, stored: 0 } });
  });

  it("skipped:skip_extraction: transcript only, searchable, nothing pending", async () => {
    const before = env.extractions().length;
    const r = await env.ingest({ agent_id: "ana", conversation_id: "c-skip", turns: [turn("the octopus has three hearts")], skip_extraction: true });
    expect(r.json).toMatchObject({ outcome: "skipped:skip_extraction", turns: { stored: 1 }, pending: 0 });
    const s = await env.api("GET", "/memory/search?agent_id=ana&kind=transcript&q=octopus");
    expect(s.json.data).toHaveLength(1);
    expect(s.json.data[0].text).toContain("three hearts");
    await env.advance(3_600_000);
    expect(env.extractions().slice(before).some((c) => JSON.stringify(c.messages).includes("octopus"))).toBe(false);
  });

  it("skipped:agent_memory_off and skipped:memory_disabled", async () => {
    const r = await env.ingest({ agent_id: "quiet", conversation_id: "c", turns: [turn("hello")] });
    expect(r.json.outcome).toBe("skipped:agent_memory_off");
    await env.memoryConfig({ enabled: false });
    const d = await env.ingest({ agent_id: "ana", conversation_id: "c-off", turns: [turn("hello")] });
    expect(d.json.outcome).toBe("skipped:memory_disabled");
    await env.memoryConfig({});
  });

  it("failed:no_extraction_model, and failed:<reason> when the model answers something unusable", async () => {
    await env.memoryConfig({ extractionModel: undefined });
    const r = await env.ingest({ agent_id: "nomodel", conversation_id: "c", turns: [turn("hello")] });
    expect(r.json.outcome).toBe("failed:no_extraction_model");
    expect((await env.api("POST", "/memory/flush", { agent_id: "nomodel" })).json.sessions).toEqual([{ conversation_id: "c", outcome: "failed:no_extraction_model" }]);
    expect(env.mem.store.pending("nomodel", "c")).toMatchObject([{ attempts: 0 }]); // waiting, not failing
    await env.memoryConfig({}); // a model again: the waiting session gets its debounce back
    expect(env.mem.isDebouncing("nomodel", "c")).toBe(true);
    await env.advance(60_000);
    expect(env.mem.store.pending("nomodel", "c")).toEqual([]);
    env.up.script(EXTRACTOR, () => ({ text: "sorry, I cannot do JSON" }));
    try {
      const f = await env.ingest({ agent_id: "ana", conversation_id: "c-bad", turns: [turn("hello there")], flush: true });
      expect(f.json.outcome).toBe("failed:invalid_json");
      expect(f.json.pending).toBe(1); // kept for the retry
    } finally {
      env.up.script(EXTRACTOR, (b) => ({ text: extractorAnswer(b) }));
    }
  });

  it("refuses bad bodies with 400 and unknown agents with 404", async () => {
    expect((await env.ingest({ agent_id: "ana", conversation_id: "c", turns: [] })).status).toBe(400);
    expect((await env.ingest({ agent_id: "ana", conversation_id: "c", turns: [{ user: 1 }] })).json.error.param).toBe("turns[0]");
    expect((await env.ingest({ agent_id: "ana", turns: [turn("x")] })).json.error.param).toBe("conversation_id");
    expect((await env.ingest({ agent_id: "ana", conversation_id: "c", turns: [turn("x")], session_date: "yesterday-ish" })).status).toBe(400);
    expect((await env.ingest({ agent_id: "ghost", conversation_id: "c", turns: [turn("x")] })).status).toBe(404);
  });
});

describe("dead letters", () => {
  it("retries twice on the clock, then records a dead letter visible over the API; a retry distills", async () => {
    env.up.script(EXTRACTOR, () => ({ text: "not json" }));
    const r = await env.ingest({ agent_id: "ana", conversation_id: "c-dead", turns: [turn("remember that dead letters work")], flush: true });
    expect(r.json.outcome).toBe("failed:invalid_json");
    await env.advance(30_000); // attempt 2
    expect((await env.api("GET", "/memory/dead-letters?agent_id=ana")).json.data.filter((d: any) => d.conversation_id === "c-dead")).toHaveLength(0);
    await env.advance(120_000); // attempt 3: dead
    const dl = (await env.api("GET", "/memory/dead-letters?agent_id=ana")).json.data.find((d: any) => d.conversation_id === "c-dead");
    expect(dl).toMatchObject({ object: "memory.dead_letter", reason: "invalid_json", attempts: 3, signals: 1, resolved_at: null });
    const runs = (await env.api("GET", "/memory/runs?agent_id=ana&type=distillation")).json.data.filter((x: any) => x.result.conversation_id === "c-dead");
    expect(runs.map((x: any) => x.trigger).sort()).toEqual(["ingest", "retry", "retry"]);
    await env.advance(3_600_000);
    expect(env.mem.store.pending("ana", "c-dead")).toHaveLength(0); // dead, not pending
    env.up.script(EXTRACTOR, (b) => ({ text: extractorAnswer(b) }));
    const retry = await env.api("POST", `/memory/dead-letters/${dl.id}/retry`);
    expect(retry.json).toMatchObject({ outcome: "distilled" });
    expect((await env.api("POST", `/memory/dead-letters/${dl.id}/retry`)).status).toBe(409);
    const s = await env.api("GET", "/memory/search?agent_id=ana&kind=facts&q=dead letters");
    expect(s.json.data[0].text).toBe("Dead letters work.");
  });
});

describe("MemoryConfig", () => {
  it("is Ready (no longer NotImplemented), reports the clamped values in force and the recall mode", async () => {
    await env.memoryConfig({ memoryBudgetTokens: 9000, summaryDebounceSeconds: 5 });
    const o = env.svc.svc.store.get("MemoryConfig", "memory")!;
    expect(o.status.conditions?.find((c) => c.type === "Ready")).toMatchObject({ status: "True", reason: "Active" });
    expect(o.status.conditions?.find((c) => c.type === "Ready")?.message).toContain("lexical recall only");
    expect((o.status as any).effective).toMatchObject({ memoryBudgetTokens: 4000, summaryDebounceSeconds: 10 });
    expect(env.mem.settings()).toMatchObject({ memoryBudgetTokens: 4000, summaryDebounceSeconds: 10, extractionModel: EXTRACTOR });
    await env.memoryConfig({});
  });

  it("rounds a fraction instead of refusing it, with the warning in the apply output and in the condition", async () => {
    const r = await env.api("POST", "/admin/config/apply", {
      document: "apiVersion: svc/v1\nkind: MemoryConfig\nmetadata:\n  name: memory\nspec:\n  memoryBudgetTokens: 150.7\n  extractionModel: " + EXTRACTOR + "\n",
      wait: true,
      waitTimeoutSeconds: 10,
    });
    expect(r.status).toBe(200);
    expect(r.json.plan.warnings.filter((w: any) => w.path === "/spec/memoryBudgetTokens").map((w: any) => w.message)).toEqual(["memoryBudgetTokens 150.7 is not a whole number; rounded to 151"]);
    const o = env.svc.svc.store.get("MemoryConfig", "memory")!;
    const ready = o.status.conditions?.find((c) => c.type === "Ready");
    expect(ready).toMatchObject({ status: "True", reason: "Active" });
    expect(ready?.message).toContain("warning: memoryBudgetTokens 150.7 is not a whole number; rounded to 151");
    expect((o.status as any).warnings).toEqual(["memoryBudgetTokens 150.7 is not a whole number; rounded to 151"]);
    expect(env.mem.settings().memoryBudgetTokens).toBe(151);
    await env.memoryConfig({});
    expect(env.svc.svc.store.get("MemoryConfig", "memory")!.status.conditions?.find((c) => c.type === "Ready")?.message).not.toContain("warning");
  });
});
