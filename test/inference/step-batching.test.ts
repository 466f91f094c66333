// Continuous batching: concurrent generations on one context are decoded together, every
// generating sequence in each step (engines/inference/step-batching.ts), not n-1 of them.
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

describe("step batching", { timeout: 30_000 }, () => {
  it("decodes four concurrent generations four to a step", async () => {
    // count the context's decodes (node-llama-cpp's addon context)
    const context = lm.context as unknown as { _ctx: Record<string | symbol, unknown> };
    let decodes = 0;
    context._ctx = new Proxy(context._ctx, {
      get(target, key) {
        const v = target[key];
        if (typeof v !== "function") return v;
        return key === "decodeBatch" ? () => { decodes++; return v.call(target); } : v.bind(target);
      },
    });
    const maxTokens = 40;
    const grammars = new GrammarCache(llama);
    const run = async (prompt: string) => {
      const req = chatReq({ messages: undefined, prompt, maxTokens });
      const prepared = await prepare(lm, req, grammars, maxTokens);
      const lease = await lm.lease(prepared.tokens);
      let usage = 0;
      try {
        for await (const ev of generate(lm, lease, prepared, resolveSampling(req, {}))) if (ev.type === "done") usage = ev.usage.completionTokens;
      } finally {
        lease.release();
      }
      return usage;
    };
    const counts = await Promise.all(["one", "two", "three", "four"].map((w) => run(`${w} little pigs went to`)));
    expect(counts).toEqual([maxTokens, maxTokens, maxTokens, maxTokens]);
    expect(lm.stepBatching.heldSteps).toBeGreaterThan(0);
    // 160 tokens: about 40 decodes four at a time (plus the prompts); n-1 at a time is about 54
    expect(decodes).toBeLessThan(4 * maxTokens * 0.3);
  });
});
