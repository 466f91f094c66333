// A request landing on a sequence that holds another prompt's tokens starts within a few decode
// steps while other generations run (engines/inference/stale-trim.ts), instead of waiting for the
// context lock the dispatch loop holds until every other generation has finished.
import { getLlama, type Llama } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import path from "node:path";
import { generate, prepare } from "../../engines/inference/chat-run";
import { GrammarCache } from "../../engines/inference/json-schema";
import { LoadedModel } from "../../engines/inference/loaded-model";
import { resolveSampling } from "../../engines/inference/sampling";
import { chatReq, tinyModelsDir } from "./fixture";

let llama: Llama;
let lm: LoadedModel;

beforeAll(async () => {
  const dir = await tinyModelsDir();
  llama = await getLlama({ gpu: false });
  lm = await LoadedModel.load(llama, { name: "tiny", file: path.join(dir, "svc-tiny.gguf"), contextSize: 1024, threads: 1, parallel: 4, idleUnloadSeconds: 0, maxQueue: 4, onIdle: () => {} });
}, 30_000);

afterAll(async () => {
  await lm?.dispose();
  await llama?.dispose();
});

describe("stale sequence trim", { timeout: 30_000 }, () => {
  it("starts a late request on a stale sequence within a few decodes", async () => {
    const context = lm.context as unknown as { _ctx: Record<string | symbol, unknown> };
    let decodes = 0;
    context._ctx = new Proxy(context._ctx, {
      get(target, key) {
        const v = target[key];
        if (typeof v !== "function") return v;
        return key === "decodeBatch" ? () => { decodes++; return v.call(target); } : v.bind(target);
      },
    });
    const grammars = new GrammarCache(llama);
    const run = async (prompt: string, maxTokens: number, onText?: () => void) => {
      const req = chatReq({ messages: undefined, prompt, maxTokens });
      const prepared = await prepare(lm, req, grammars, maxTokens);
      const lease = await lm.lease(prepared.tokens);
      let usage = 0;
      try {
        for await (const ev of generate(lm, lease, prepared, resolveSampling(req, {}))) {
          if (ev.type === "text") onText?.();
          if (ev.type === "done") usage = ev.usage.completionTokens;
        }
      } finally {
        lease.release();
      }
      return usage;
    };
    // every sequence holds another prompt's tokens, as on a server that has been serving
    await Promise.all(["red", "green", "blue", "pink"].map((w) => run(`${w} apples fell from the tree`, 2)));
    const trimsBefore = lm.staleTrim.trims;
    const maxTokens = 40;
    let lateRun: Promise<number> | undefined;
    let arrivedAt = -1;
    let startedAt = -1;
    const startLate = () => {
      if (lateRun) return;
      arrivedAt = decodes;
      lateRun = run("four little pigs went to", maxTokens, () => { if (startedAt < 0) startedAt = decodes; });
    };
    let texts = 0;
    const early = ["one", "two", "three"].map((w) => run(`${w} little pigs went to`, maxTokens, () => { if (++texts === 15) startLate(); }));
    const counts = await Promise.all(early);
    const late = await lateRun!;
    expect(counts).toEqual([maxTokens, maxTokens, maxTokens]);
    expect(late).toBe(maxTokens);
    expect(lm.staleTrim.trims).toBeGreaterThan(trimsBefore);
    // waiting for the other three to finish would take about 35 more decodes
    expect(startedAt - arrivedAt).toBeLessThan(10);
  });
});
