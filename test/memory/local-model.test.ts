// With a local GGUF model (the generated tiny model): the recall budget is counted with that
// model's own tokenizer, and the model serves as the embedding model through the pool (hybrid).
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { startMemEnv, type MemEnv } from "./env";
import { ensureTinyModel } from "../../engines/inference";
import { hitLine } from "../../engines/memory/recall";
import { until } from "../helpers/http";

let env: MemEnv;
beforeAll(async () => {
  env = await startMemEnv(["loc"]);
  await ensureTinyModel(env.svc.svc.modelsDir);
  await env.apply([{ kind: "Model", name: "tiny", spec: { file: "svc-tiny.gguf", contextSize: 1024, threads: 1, parallel: 2, idleUnloadSeconds: 0, embeddings: true } }]);
  await until(() => env.svc.svc.store.get("Model", "tiny")?.status.conditions?.find((c) => c.type === "Ready")?.status === "True", 30_000);
  await env.memoryConfig({ memoryBudgetTokens: 120, embeddingModel: "tiny" });
  await env.agent("loc");
  const turns = Array.from({ length: 30 }, (_, i) => ({ user: `giraffe fact ${i}: ${"long necks ".repeat((i % 5) + 1)}`, assistant: "ok" }));
  await env.ingest({ agent_id: "loc", conversation_id: "g", turns, skip_extraction: true });
  await env.mem.idle();
}, 90_000);
afterAll(async () => {
  await env?.stop();
});

describe("local model", () => {
  it("counts the recall budget with the model's tokenizer, exactly", async () => {
    const r = await env.api("GET", "/memory/recall?agent_id=loc&q=giraffe necks&model=tiny");
    expect(r.json).toMatchObject({ counted_with: "tokenizer", budget_tokens: 120 });
    const pool = env.svc.svc.engines.pool!;
    expect(r.json.tokens).toBe(await pool.countTokens("tiny", r.json.text));
    expect(r.json.tokens).toBeLessThanOrEqual(120);
    expect(r.json.skipped).toBeGreaterThan(0);
    const left = (await env.mem.search("loc", ["transcript"], "giraffe necks", 30)).filter((h) => !r.json.items.some((i: any) => i.id === h.id));
    for (const h of left) expect(await pool.countTokens("tiny", `${r.json.text}\n${hitLine(h)}`)).toBeGreaterThan(120);
  });

  it("embeds through the pool: every turn has a vector and search is hybrid", async () => {
    const st = (await env.api("GET", "/memory/status?agent_id=loc")).json;
    expect(st.recall).toBe("hybrid");
    expect(st.index.vectors).toBe(30);
    const s = await env.api("GET", "/memory/search?agent_id=loc&kind=transcript&q=giraffe");
    expect(s.json.recall).toBe("hybrid");
    expect(typeof s.json.data[0].vector).toBe("number");
  });
});
