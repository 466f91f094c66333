// The tiny model loaded with 4 sequences on one thread, and a count of its context's decodes: what
// the dispatch-loop tests (step batching, the stale-sequence trim) measure in decode steps.
import { getLlama, type Llama } from "node-llama-cpp";
import path from "node:path";
import { afterAll, beforeAll } from "vitest";
import { LoadedModel } from "../../engines/inference/loaded-model";
import { tinyModelsDir } from "./fixture";

export async function loadTinyParallel(llama: Llama): Promise<LoadedModel> {
  const dir = await tinyModelsDir();
  return LoadedModel.load(llama, { name: "tiny", file: path.join(dir, "svc-tiny.gguf"), contextSize: 1024, threads: 1, parallel: 4, idleUnloadSeconds: 0, maxQueue: 4, onIdle: () => {} });
}

/** The model for one test file: loaded before its tests, disposed after them. */
export function useTinyParallel(): { llama(): Llama; lm(): LoadedModel } {
  let llama: Llama | undefined;
  let lm: LoadedModel | undefined;
  beforeAll(async () => {
    llama = await getLlama({ gpu: false });
    lm = await loadTinyParallel(llama);
  }, 30_000);
  afterAll(async () => {
    await lm?.dispose();
    await llama?.dispose();
  });
  return { llama: () => llama!, lm: () => lm! };
}

/** Counts every decodeBatch call on the model's addon context from now on (through a proxy, so
 * wrappers svc installs on the context still run). */
export function countDecodes(lm: LoadedModel): { readonly n: number } {
  const counter = { n: 0 };
  const context = lm.context as unknown as { _ctx: Record<string | symbol, unknown> };
  context._ctx = new Proxy(context._ctx, {
    get(target, key) {
      const v = target[key];
      if (typeof v !== "function") return v;
      return key === "decodeBatch" ? () => { counter.n++; return v.call(target); } : v.bind(target);
    },
  });
  return counter;
}
