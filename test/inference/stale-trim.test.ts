// A request landing on a sequence that holds another prompt's tokens starts within a few decode
// steps while other generations run (engines/inference/stale-trim.ts), instead of waiting for the
// context lock the dispatch loop holds until every other generation has finished.
import { describe, expect, it } from "vitest";
import { generate, prepare } from "../../engines/inference/chat-run";
import { GrammarCache } from "../../engines/inference/json-schema";
import { resolveSampling } from "../../engines/inference/sampling";
import { chatReq } from "./fixture";
import { countDecodes, useTinyParallel } from "./tiny-parallel";

const tiny = useTinyParallel();

describe("stale sequence trim", { timeout: 30_000 }, () => {
  it("starts a late request on a stale sequence within a few decodes", async () => {
    const lm = tiny.lm();
    const llama = tiny.llama();
    const decodes = countDecodes(lm); // the context's decodes from here on
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
      arrivedAt = decodes.n;
      lateRun = run("four little pigs went to", maxTokens, () => { if (startedAt < 0) startedAt = decodes.n; });
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
