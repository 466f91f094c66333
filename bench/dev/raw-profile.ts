// The in-process baseline of bench/dev/stream-profile.ts: LlamaCompletion (svc's generation API)
// decoding the same way, under --cpu-prof. `node --cpu-prof --cpu-prof-dir=DIR --import tsx bench/dev/raw-profile.ts`
import os from "node:os";
import path from "node:path";
import { getLlama } from "node-llama-cpp";
import { writeTinyGguf, rawCompletionBenchmark, rawDecodeBenchmark } from "../../engines/inference";
const file = path.join(os.tmpdir(), "svc-dev-medium.gguf");
await writeTinyGguf(file, "medium");
const llama = await getLlama({ gpu: false });
const model = await llama.loadModel({ modelPath: file });
const tokens = Number(process.env.TOKENS ?? 300);
const opts = { threads: 1, contextSize: 2048, contextSequences: 4, tokens, sampling: { temperature: 0 } };
const which = process.env.RAW ?? "completion";
const t0 = performance.now();
for (let r = 0; r < 3; r++) {
  const res = which === "completion" ? await rawCompletionBenchmark(model, { ...opts, prompt: `${1000 + r} The quick brown fox jumps over the lazy dog and then` })
    : await rawDecodeBenchmark(file, { ...opts, model, prompt: `${1000 + r} The quick brown fox jumps over the lazy dog and then` });
  console.log(which, res.tokensPerSecond.toFixed(1), "tok/s", (res.decodeCpuMicros / res.generatedTokens).toFixed(0), "µs CPU/token");
}
console.log("ms", (performance.now() - t0).toFixed(0));
process.exit(0);
