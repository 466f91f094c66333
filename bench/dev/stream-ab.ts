// Dev tool (not a test): two builds of svc streaming local generations side by side, for a change
// to the per-token path. Both `svc serve` processes run on core 1 with the same generated model
// (this machine's `medium` GGUF, 1 thread, 4 sequences); the client is this process (pin it to
// core 0). Each round streams 3 completions of 300 tokens from each, in alternating order, and
// reads each process's CPU time per token from the second token to the last (schedstat, ns): its
// main thread (svc's JS, Node's HTTP and the addon's calls) and all its threads (the decode too),
// with its tokens/s. The last line pairs the two round by round. Run it with both sides on the same
// build first: two processes of one build differ by a few percent (docs/operations.md).
//   BASE=<another checkout, built> [ROUTE=chat] [ROUNDS=6] taskset -c 0 node --import tsx bench/dev/stream-ab.ts
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { mediumModel } from "../inference";
import { startSvcProcess, sleep } from "../processes";

const route = process.env.ROUTE === "chat" ? "chat" : "completions";
const tokens = 300;
const rounds = Number(process.env.ROUNDS ?? 6);
if (!process.env.BASE) throw new Error("BASE=<path of another svc checkout, built> is required");
const tmp = mkdtempSync(path.join(os.tmpdir(), "svc-stream-ab-"));
const { cfg } = await mediumModel(tmp);
const checkouts: Record<string, string | undefined> = { base: path.resolve(process.env.BASE), this: undefined };
const servers: Record<string, { proc: import("node:child_process").ChildProcess; url: string }> = {};

/** CPU time (µs) of a process's main thread and of all its threads */
function cpuOf(pid: number): { main: number; all: number } {
  let main = 0;
  let all = 0;
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try {
      const us = Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, "utf8").split(" ")[0]) / 1000;
      all += us;
      if (t === String(pid)) main += us;
    } catch {
      // a thread that ended meanwhile
    }
  }
  return { main, all };
}

const PROMPT = "The quick brown fox jumps over the lazy dog and then";
const body = (i: number) =>
  route === "chat"
    ? { model: "medium", messages: [{ role: "user", content: `${i} ${PROMPT}` }], max_tokens: tokens, temperature: 0, stream: true }
    : { model: "medium", prompt: `${i} ${PROMPT}`, max_tokens: tokens, temperature: 0, stream: true };

/** one stream: its socket chunks after the first, and the CPU and time they took */
async function stream(url: string, pid: number, i: number): Promise<{ n: number; main: number; all: number; ms: number }> {
  const res = await fetch(`${url}/v1/${route === "chat" ? "chat/completions" : "completions"}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body(i)) });
  let n = 0;
  let from = { main: 0, all: 0 };
  let t0 = 0;
  for await (const _ of res.body as AsyncIterable<Uint8Array>) {
    if (++n === 2) {
      from = cpuOf(pid);
      t0 = performance.now();
    }
  }
  const to = cpuOf(pid);
  return { n: n - 2, main: to.main - from.main, all: to.all - from.all, ms: performance.now() - t0 };
}

try {
  for (const [name, checkout] of Object.entries(checkouts)) servers[name] = await startSvcProcess({ home: path.join(tmp, `home-${name}`), config: cfg, core: 1, checkout });
  for (const s of Object.values(servers)) for (let i = 0; i < 4; i++) await stream(s.url, s.proc.pid!, i); // warm-up
  const per: Record<string, { main: number[]; all: number[]; tps: number[] }> = {};
  for (let r = 0; r < rounds; r++) {
    for (const [name, s] of r % 2 ? Object.entries(servers).reverse() : Object.entries(servers)) {
      const sum = { n: 0, main: 0, all: 0, ms: 0 };
      for (let j = 0; j < 3; j++) {
        const x = await stream(s.url, s.proc.pid!, 100 + r * 10 + j);
        sum.n += x.n;
        sum.main += x.main;
        sum.all += x.all;
        sum.ms += x.ms;
      }
      const e = (per[name] ??= { main: [], all: [], tps: [] });
      e.main.push(sum.main / sum.n);
      e.all.push(sum.all / sum.n);
      e.tps.push((sum.n / sum.ms) * 1000);
      console.log(`round ${r + 1} ${name}: main ${Math.round(sum.main / sum.n)} µs a token, all threads ${Math.round(sum.all / sum.n)} µs, ${((sum.n / sum.ms) * 1000).toFixed(1)} tokens/s`);
    }
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const paired = (f: "main" | "all") => per.this[f].map((x, i) => x - per.base[f][i]).sort((a, b) => a - b);
  const span = (xs: number[]) => `${Math.round(med(xs))} µs (${Math.round(xs[0])} to ${Math.round(xs[xs.length - 1])})`;
  console.log(`${route}, this minus base, paired by round: main thread ${span(paired("main"))}, all threads ${span(paired("all"))}; tokens/s this / base ${med(per.this.tps.map((x, i) => x / per.base.tps[i])).toFixed(3)}`);
} finally {
  for (const s of Object.values(servers)) s.proc.kill("SIGTERM");
  await sleep(500);
  rmSync(tmp, { recursive: true, force: true });
}
