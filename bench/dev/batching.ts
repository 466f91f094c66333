// Occupancy of node-llama-cpp's decode batches (sequences per decodeBatch), a load-robust check of
// continuous batching: raw node-llama-cpp decoding 4 sequences in one context vs svc's ModelPool
// serving 4 concurrent requests. `TOKENS=100 node --import tsx bench/dev/batching.ts`; TRACE=1 also
// prints the sequence ids of the pool's last 90 decodes; LATE=ms starts the 4th request that much later;
// STALE=1 leaves another prompt's tokens on every sequence first.
import os from "node:os";
import path from "node:path";
import { getLlama, LlamaContext } from "node-llama-cpp";
import { writeTinyGguf, rawParallelDecodeBenchmark, ModelPool } from "../../engines/inference";
const file = path.join(os.tmpdir(), "svc-dev-medium.gguf");
await writeTinyGguf(file, "medium");
let batches: number[] = [];
const trace: string[] = [];
const C: any = LlamaContext;
const create = C._create;
C._create = async function (...a: any[]) {
  const c = await create.apply(this, a);
  const ctx = c._ctx;
  let seqs = new Set<number>();
  const add = ctx.addToBatch.bind(ctx);
  const dec = ctx.decodeBatch.bind(ctx);
  const counted = () => { batches.push(seqs.size); if (process.env.TRACE) trace.push([...seqs].join("")); seqs = new Set(); return dec(); };
  c._ctx = new Proxy(ctx, { get(t, k) {
    if (k === "addToBatch") return (id: number, ...r: any[]) => { seqs.add(id); return add(id, ...r); };
    // svc's own wrapper (engines/inference/stale-trim.ts) lands on the target and calls `counted`
    if (k === "decodeBatch") return Object.getOwnPropertyDescriptor(t, k)?.value ?? counted;
    const v = t[k]; return typeof v === "function" ? v.bind(t) : v;
  } });
  return c;
};
const summary = (label: string) => { const n = batches.length; const avg = batches.reduce((a, b) => a + b, 0) / n; console.log(label, "dispatches", n, "avg sequences/dispatch", avg.toFixed(2), "hist", JSON.stringify([1, 2, 3, 4].map((k) => batches.filter((b) => b === k).length))); batches = []; };
const llama = await getLlama({ gpu: false });
const PROMPT = "The quick brown fox jumps over the lazy dog and then";
const tokens = Number(process.env.TOKENS ?? 100);
const model = await llama.loadModel({ modelPath: file });
batches = [];
let t0 = performance.now();
const r = await rawParallelDecodeBenchmark(model, { threads: 1, tokens, prompt: PROMPT, sequences: 4 });
console.log("raw4 tps", r.aggregateTps.toFixed(1)); summary("raw4");
await model.dispose();
const pool = new ModelPool({ modelsDir: os.tmpdir(), llama });
pool.register("m", { file, threads: 1, parallel: 4, contextSize: 2048, idleUnloadSeconds: 0 } as any);
// STALE=1: every sequence first holds another prompt's tokens (a server that has been serving)
const warm = process.env.STALE ? 4 : 1;
await Promise.all(Array.from({ length: warm }, (_, i) => (async () => { for await (const _ of pool.chat({ model: "m", prompt: `${i} ${PROMPT}`, maxTokens: 2, temperature: 0 } as any)) void _; })()));
batches = [];
trace.length = 0;
t0 = performance.now();
let n = 0;
const firstMs: number[] = [];
const late = Number(process.env.LATE ?? 0); // ms the 4th request starts after the others
await Promise.all(Array.from({ length: 4 }, (_, i) => (async () => { if (i === 3 && late) await new Promise((r) => setTimeout(r, late)); for await (const e of pool.chat({ model: "m", prompt: `${"ABCD"[i]}${PROMPT.slice(1)}`, maxTokens: tokens, temperature: 0 } as any)) if ((e as any).type === "text" && n++ >= 0) firstMs[i] ??= performance.now() - t0; })()));
console.log("pool4 first token per request (ms)", firstMs.map((x) => x.toFixed(0)).join(" "));
console.log("pool4 tps(chunks)", ((n * 1000) / (performance.now() - t0)).toFixed(1)); summary("pool4");
if (process.env.TRACE) console.log(trace.slice(-90).join(" "));
await pool.close();
process.exit(0);
