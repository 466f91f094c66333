import { getLlama, LlamaChat, LlamaCompletion } from "node-llama-cpp";
const llama = await getLlama({ gpu: false });
const model = await llama.loadModel({ modelPath: "/tmp/inf/tiny.gguf" });
const ctx = await model.createContext({ contextSize: 2048, sequences: 2, threads: 1 });
const seq = ctx.getSequence();
const N = 1000;
for (let rep = 0; rep < 6; rep++) {
  await seq.clearHistory();
  let t = performance.now(); let n = 0;
  const toks = model.tokenize("hello world");
  for await (const tok of seq.evaluate(toks, { temperature: 0 })) { model.detokenize([tok]); if (++n >= N) break; }
  console.log("raw", (n / (performance.now() - t) * 1000).toFixed(0));
  await seq.clearHistory();
  const chat = new LlamaChat({ contextSequence: seq });
  t = performance.now(); n = 0;
  await chat.generateResponse([{ type: "user", text: "hello world" }, { type: "model", response: [] }], { maxTokens: N, onTextChunk: () => { n++; } });
  console.log("chat", (N / (performance.now() - t) * 1000).toFixed(0), n);
  chat.dispose();
  await seq.clearHistory();
  const comp = new LlamaCompletion({ contextSequence: seq });
  t = performance.now();
  await comp.generateCompletion("hello world", { maxTokens: N });
  console.log("completion", (N / (performance.now() - t) * 1000).toFixed(0));
  comp.dispose({disposeSequence: false});
}
