// Dev tool (not a test): the per-request "shape" of svc's chat path beside the bare Node gateway
// (bench/bare-gateway.ts): promises and async turns, objects allocated (bytes, from
// --trace-gc-nvp's `allocated=`), Map/Set creations, JSON calls and bytes, Buffer copies, regex
// executions, clock and crypto calls, counted by bench/dev/shape-hooks.mjs preloaded in both. Both
// take the same load (50 connections, the gateway bench's body, held to RATE requests/s so a busy
// machine gives both the same request count); each figure is the delta over the run / requests.
// SHAPE_STACKS=1 adds each count by the first frame of svc's (or a package's) code that made it.
// ALLOC=1 instead lists bytes allocated per request by allocating function (V8's sampling heap
// profiler with garbage kept, every 512 bytes), the top 40 of each path.
//   [RATE=1000] [SECS=5] [SHAPE_STACKS=1 | ALLOC=1] node --import tsx bench/dev/gateway-shape.ts
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { ChildProcess } from "node:child_process";
import { gatewayEnv, gatewayKey, loadRun, root, sleep, start, startStandinGateway, startSvcProcess } from "../processes";

const BODY = JSON.stringify({ model: "bench-model", messages: [{ role: "user", content: "Say hello." }], max_tokens: 16 });
const rate = Number(process.env.RATE ?? 1000);
const secs = Number(process.env.SECS ?? 5);
const hooks = path.join(root, "bench/dev/shape-hooks.mjs");
const tmp = mkdtempSync(path.join(os.tmpdir(), "svc-shape-"));

interface Target { name: string; proc: ChildProcess; url: string; headers: Record<string, string>; out: string; allocated: { bytes: number } }

/** sums --trace-gc-nvp's `allocated=` (bytes allocated since the previous GC) from a child's stdout;
 * `onLine` sees the other lines */
function gcBytes(proc: ChildProcess, onLine: (l: string) => void = () => {}): { bytes: number } {
  const acc = { bytes: 0 };
  let partial = "";
  proc.stdout!.on("data", (d: Buffer) => {
    const lines = (partial + d.toString()).split("\n");
    partial = lines.pop()!;
    for (const l of lines) {
      const m = / allocated=(\d+)/.exec(l);
      if (m) acc.bytes += Number(m[1]);
      else onLine(l);
    }
  });
  return acc;
}

async function snapshot(t: Target): Promise<Record<string, number>> {
  t.proc.kill("SIGUSR2");
  for (let i = 0; i < 100; i++) {
    await sleep(50);
    try {
      const c = JSON.parse(readFileSync(t.out, "utf8"));
      rmSync(t.out);
      return { ...c, "bytes allocated (GC trace)": t.allocated.bytes };
    } catch { /* not written yet */ }
  }
  throw new Error(`${t.name} wrote no counts`);
}

const procs: ChildProcess[] = [];
try {
  const up = await startStandinGateway(tmp);
  procs.push(up.proc);
  const nodeArgs = ["--import", hooks, "--trace-gc-nvp"];
  if (process.env.ALLOC === "1") process.env.SHAPE_ALLOC = "1"; // children inherit it
  const svcOut = path.join(tmp, "svc.json");
  let svcAlloc = { bytes: 0 };
  const s = await startSvcProcess({ home: path.join(tmp, "svc"), config: up.cfg, core: 1, env: { ...gatewayEnv, SHAPE_OUT: svcOut }, nodeArgs, stdout: () => {} });
  procs.push(s.proc);
  svcAlloc = gcBytes(s.proc);
  const svc: Target = { name: "svc", proc: s.proc, url: `${s.url}/v1/chat/completions`, headers: { authorization: `Bearer ${await gatewayKey(s.url)}` }, out: svcOut, allocated: svcAlloc };
  const bareOut = path.join(tmp, "bare.json");
  const bp = start(1, process.execPath, [...nodeArgs, "--import", "tsx", "bench/bare-gateway.ts", up.url], { SHAPE_OUT: bareOut });
  procs.push(bp);
  let port = 0;
  const bareAlloc = gcBytes(bp, (l) => { if (/^\d+$/.test(l.trim())) port = Number(l); });
  while (!port) await sleep(50);
  const bare: Target = { name: "bare", proc: bp, url: `http://127.0.0.1:${port}/v1/chat/completions`, headers: {}, out: bareOut, allocated: bareAlloc };
  const per: Record<string, Record<string, number>> = {};
  if (process.env.ALLOC === "1") {
    for (const t of [svc, bare]) {
      await loadRun({ url: t.url, headers: t.headers, body: BODY, connections: 50, seconds: 2, rate });
      t.proc.kill("SIGUSR2");
      await sleep(200);
      const r = await loadRun({ url: t.url, headers: t.headers, body: BODY, connections: 50, seconds: secs, rate });
      const by = await snapshot(t);
      const n = r.rps * secs;
      const top = Object.entries(by).filter(([k]) => !k.startsWith("bytes allocated")).sort((a, b) => b[1] - a[1]).slice(0, 40);
      const total = Object.entries(by).filter(([k]) => !k.startsWith("bytes allocated")).reduce((a, [, v]) => a + v, 0);
      console.log(`\n${t.name}: ${Math.round(total / n)} bytes sampled a request over ~${Math.round(n)} requests`);
      for (const [k, v] of top) console.log(`${String(Math.round(v / n)).padStart(7)}  ${k}`);
    }
    process.exit(0);
  }
  for (const t of [svc, bare]) {
    await loadRun({ url: t.url, headers: t.headers, body: BODY, connections: 50, seconds: 2, rate });
    const a = await snapshot(t);
    const r = await loadRun({ url: t.url, headers: t.headers, body: BODY, connections: 50, seconds: secs, rate });
    const b = await snapshot(t);
    const n = (b.requests ?? 0) - (a.requests ?? 0);
    if (r.non2xx + r.errors) console.log(`${t.name}: ${r.non2xx + r.errors} failed`);
    per[t.name] = Object.fromEntries(Object.keys(b).filter((k) => k !== "requests").map((k) => [k, (b[k] - (a[k] ?? 0)) / n]));
    console.log(`${t.name}: ${n} requests counted`);
  }
  const keys = [...new Set([...Object.keys(per.svc), ...Object.keys(per.bare)])].filter((k) => (per.svc[k] ?? 0) >= 0.05 || (per.bare[k] ?? 0) >= 0.05).sort();
  const f = (x = 0) => (x >= 100 ? Math.round(x).toLocaleString("en") : x.toFixed(1));
  console.log("| per request | svc | bare | svc - bare |\n| --- | --- | --- | --- |");
  for (const k of keys) console.log(`| ${k} | ${f(per.svc[k])} | ${f(per.bare[k])} | ${f((per.svc[k] ?? 0) - (per.bare[k] ?? 0))} |`);
} finally {
  for (const p of procs) p.kill("SIGTERM");
  await sleep(300);
  rmSync(tmp, { recursive: true, force: true });
}
