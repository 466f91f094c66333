// A LoadedModel disposed (pool closed) while a lease is on its way: the lease fails with
// model_unavailable and is never handed out on the disposed model.
import { getLlama, type Llama } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generate, prepare } from "../../engines/inference/chat-run";
import { GrammarCache } from "../../engines/inference/json-schema";
import type { LoadedModel } from "../../engines/inference/loaded-model";
import { resolveSampling } from "../../engines/inference/sampling";
import { chatReq } from "./fixture";
import { loadTinyParallel } from "./tiny-parallel";

let llama: Llama;
beforeAll(async () => {
  llama = await getLlama({ gpu: false });
}, 30_000);
afterAll(async () => {
  await llama?.dispose();
});

const tick = () => new Promise((r) => setImmediate(r));

describe("LoadedModel dispose during a lease", { timeout: 60_000 }, () => {
  it("refuses a lease whose stale-sequence trim waited on a decode when the model was disposed", async () => {
    const lm: LoadedModel = await loadTinyParallel(llama);
    const grammars = new GrammarCache(llama);
    let disposing: Promise<void> | undefined;
    const run = async (prompt: string, maxTokens: number) => {
      const req = chatReq({ messages: undefined, prompt, maxTokens });
      const prepared = await prepare(lm, req, grammars, maxTokens);
      const lease = await lm.lease(prepared.tokens);
      try {
        for await (const _ of generate(lm, lease, prepared, resolveSampling(req, {})));
      } finally {
        lease.release();
      }
    };
    try {
      // every sequence holds another prompt's tokens, as on a server that has been serving
      await Promise.all(["red", "green", "blue", "pink"].map((w) => run(`${w} apples fell from the tree`, 2)));
      // three sequences generate; the fourth holds stale tokens
      const running = ["one", "two", "three"].map((w) => run(`${w} little pigs went to`, 5000).catch((e) => e));
      const trim = lm.staleTrim as unknown as { decoding: boolean; pending: unknown[] };
      for (let i = 0; !trim.decoding; i++) {
        if (i > 100_000) throw new Error("no decode started");
        await tick();
      }
      // a decode runs now (it settles on a later macrotask): the late lease's trim waits for it
      const late = lm.lease(lm.model.tokenize("four little pigs went to the market"));
      await Promise.resolve();
      await Promise.resolve();
      expect(trim.pending.length).toBe(1);
      disposing = lm.dispose(); // pool.close() now
      const outcome = await Promise.race([
        late.then((l) => { l.release(); return "leased on a disposed model"; }, (e) => e),
        new Promise((r) => setTimeout(() => r("hung"), 10_000).unref()),
      ]);
      expect(outcome).toMatchObject({ code: "model_unavailable" });
      await Promise.all(running);
    } finally {
      await (disposing ?? lm.dispose());
    }
  });
});
