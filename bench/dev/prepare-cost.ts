// Time of svc's prepare() (template render + tokenize, before any evaluation) for a chat request
// vs a /v1/completions prompt of about as many tokens, on the generated medium model, in process:
// `node --import tsx bench/dev/prepare-cost.ts`. The difference is chat's template work on the
// first token (measured 2026-11-28 on a loaded machine: chat 327 µs, completion 189 µs).
import os from "node:os";
import path from "node:path";
import { getLlama } from "node-llama-cpp";
import { writeTinyGguf } from "../../engines/inference";
import { LoadedModel, prepare, GrammarCache } from "../../engines/inference/runtime";
import type { ChatRequest } from "../../engines/chat/types";

const file = path.join(os.tmpdir(), "svc-prepare-cost-medium.gguf");
await writeTinyGguf(file, "medium");
const llama = await getLlama({ gpu: false });
const lm = await LoadedModel.load(llama, { name: "m", file, contextSize: 2048, threads: 1, parallel: 4, idleUnloadSeconds: 0, maxQueue: 8, onIdle: () => {} });
const grammars = new GrammarCache(llama);
const text = (i: number) => `${1000 + i} The quick brown fox jumps over the lazy dog and then`;
const chat = (i: number) => ({ model: "m", messages: [{ role: "user", content: text(i) }] }) as unknown as ChatRequest;
const completion = (i: number) => ({ model: "m", messages: [], prompt: `${text(i)} fox fox fox` }) as unknown as ChatRequest;
for (const [name, make] of [["chat", chat], ["completion", completion]] as const) {
  for (let i = 0; i < 50; i++) await prepare(lm, make(i), grammars, 100); // warm up
  const n = 300;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await prepare(lm, make(i), grammars, 100);
  console.log(`${name}: prepare ${(((performance.now() - t0) * 1000) / n).toFixed(1)} µs`);
}
await lm.dispose();
await llama.dispose();
