import { getLlama, resolveChatWrapper } from "node-llama-cpp";
import { writeTinyGguf } from "../../engines/inference";
import { LoadedModel, prepare, GrammarCache } from "../../engines/inference/runtime";
const file = "/tmp/infprof/m.gguf";
await writeTinyGguf(file, "medium");
const llama = await getLlama({ gpu: false });
const lm = await LoadedModel.load(llama, { name: "m", file, contextSize: 2048, threads: 1, parallel: 4, idleUnloadSeconds: 0, maxQueue: 8, onIdle: () => {} });
console.log("wrapper", lm.chatWrapper.constructor.name, lm.chatWrapper.wrapperName);
const g = new GrammarCache(llama);
const chatReq = (i: number) => ({ model: "m", messages: [{ role: "user", content: `${1000 + i} The quick brown fox jumps over the lazy dog and then` }] }) as any;
const compReq = (i: number) => ({ model: "m", messages: [], prompt: `${1000 + i} The quick brown fox jumps over the lazy dog and then fox fox fox` }) as any;
for (const [name, mk] of [["chat", chatReq], ["completion", compReq]] as const) {
  for (let i = 0; i < 50; i++) await prepare(lm, mk(i), g, 100);
  const t0 = performance.now();
  const N = 300;
  for (let i = 0; i < N; i++) await prepare(lm, mk(i), g, 100);
  console.log(name, "prepare µs", ((performance.now() - t0) * 1000 / N).toFixed(1));
}
await lm.dispose();
