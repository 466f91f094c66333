// Continuous batching: concurrent generations on one context are decoded together, every
// generating sequence in each step (engines/inference/step-batching.ts), not n-1 of them.
import { describe, expect, it } from "vitest";
import { generate, prepare } from "../../engines/inference/chat-run";
import { GrammarCache } from "../../engines/inference/json-schema";
import { resolveSampling } from "../../engines/inference/sampling";
import { chatReq } from "./fixture";
import { countDecodes, useTinyParallel } from "./tiny-parallel";

const tiny = useTinyParallel();

describe("step batching", { timeout: 30_000 }, () => {
  it("decodes four concurrent generations four to a step", async () => {
    const lm = tiny.lm();
    const llama = tiny.llama();
    const decodes = countDecodes(lm); // the context's decodes from here on
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
    expect(decodes.n).toBeLessThan(4 * maxTokens * 0.3);
  });
});
