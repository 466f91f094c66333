// CPU profile of `svc serve` while it streams long local generations: ROUTE=completions|chat,
// STREAMS=1|4. Prints svc's main-thread busy time per decoded token over the streaming window and
// its top self-time functions (llama.cpp decodes on a libuv worker: the main thread's busy time
// is the JS and syscalls around each token; bench/dev/raw-profile.ts is the in-process baseline).
// `ROUTE=chat STREAMS=1 node --import tsx bench/dev/stream-profile.ts`
import { mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { mediumModel } from "../inference";
import { startSvcProcess, sleep } from "../processes";

const route = process.env.ROUTE ?? "completions";
const streams = Number(process.env.STREAMS ?? 1);
const tokens = Number(process.env.TOKENS ?? 300);
const reps = Number(process.env.REPS ?? 3);
const tmp = mkdtempSync(path.join(os.tmpdir(), "svc-dev-prof-"));
const { cfg } = await mediumModel(tmp);
const profDir = path.join(tmp, "prof");
const { proc, url } = await startSvcProcess({ home: path.join(tmp, "home"), config: cfg, nodeArgs: ["--cpu-prof", "--cpu-prof-dir", profDir, "--cpu-prof-interval", "200"] });
const PROMPT = "The quick brown fox jumps over the lazy dog and then";
const body = (i: number) => route === "chat"
  ? { model: "medium", messages: [{ role: "user", content: `${i} ${PROMPT}` }], max_tokens: tokens, temperature: 0, stream: true }
  : { model: "medium", prompt: `${i} ${PROMPT}`, max_tokens: tokens, temperature: 0, stream: true };
const one = async (i: number) => {
  const res = await fetch(`${url}/v1/${route === "chat" ? "chat/completions" : "completions"}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body(i)) });
  let n = 0;
  for await (const _ of res.body as any) n++;
  return n;
};
await one(0);
const t0 = performance.now();
let chunks = 0;
for (let r = 0; r < reps; r++) chunks += (await Promise.all(Array.from({ length: streams }, (_, s) => one(1000 + r * 10 + s)))).reduce((a, b) => a + b, 0);
const window = performance.now() - t0;
console.log(`${route} x${streams}: ${chunks} socket chunks in ${(performance.now() - t0).toFixed(0)} ms`);
proc.kill("SIGTERM");
await new Promise((r) => proc.once("exit", r));
await sleep(200);
// the largest profile is svc's main thread (workers write their own)
const main = readdirSync(profDir).map((f) => path.join(profDir, f)).sort((a, b) => statSync(b).size - statSync(a).size)[0]!;
const prof = JSON.parse(readFileSync(main, "utf8"));
const self = new Map<string, number>();
const byId = new Map<number, any>(prof.nodes.map((n: any) => [n.id, n]));
const dt = new Map<number, number>();
// only the streaming window: the samples of the last `window` ms before svc began to exit
let at = 0;
const times = prof.timeDeltas.map((d: number) => (at += d));
const endAt = times[times.length - 1] - 150_000, startAt = endAt - window * 1000;
prof.samples.forEach((id: number, i: number) => { if (times[i] >= startAt && times[i] <= endAt) dt.set(id, (dt.get(id) ?? 0) + (prof.timeDeltas[i] ?? 0)); });
let total = 0;
for (const [id, t] of dt) {
  const n = byId.get(id);
  const cf = n.callFrame;
  const key = `${cf.functionName || "(anon)"} ${cf.url.replace(/.*node_modules\//, "nm/").replace(/.*\/dist\//, "dist/")}:${cf.lineNumber}`;
  self.set(key, (self.get(key) ?? 0) + t);
  total += t;
}
const top = [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.TOP ?? 40));
let busy = 0;
for (const [k, t] of self) if (!k.startsWith("(idle)")) busy += t;
console.log(`busy ${(busy / 1000).toFixed(0)} ms of ${(total / 1000).toFixed(0)} ms; ${(busy / tokens / reps / streams).toFixed(0)} µs busy per token`);
for (const [k, t] of top) console.log(`${((t / total) * 100).toFixed(1).padStart(5)}%  ${(t / 1000).toFixed(0).padStart(6)} ms  ${k}`);
console.log("profile:", profDir);
