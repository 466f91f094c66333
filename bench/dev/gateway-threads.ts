// Dev tool (not a test): where a gateway's CPU goes by thread (the main thread; the helpers: V8's GC
// and compiler threads and libuv's pool, all named "node"; any other named thread), for svc and, with TRACED=1, a traced svc beside it (OTLP
// http/protobuf to a loopback collector on core 0): CPU a request per thread name, from
// /proc/<pid>/task/*, over alternating rounds at 50 connections.
//   [TRACED=1] node --import tsx bench/dev/gateway-threads.ts [rounds] [seconds]
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { gatewayEnv, gatewayKey, loadRun, startStandinGateway, startSvcProcess } from "../processes";
import { startCollector } from "../otlp-collector";

const BODY = JSON.stringify({ model: "bench-model", messages: [{ role: "user", content: "Say hello." }], max_tokens: 16 });
const rounds = Number(process.argv[2] ?? 3);
const seconds = Number(process.argv[3] ?? 5);

/** user+system CPU (µs) of each thread of a process, summed by thread name */
function threads(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      // the main thread's id is the process's; V8's and libuv's helpers are all named "node" in Node 20
      const comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim().replace(/\d+$/, "#");
      const name = Number(tid) === pid ? "main" : comm === "node" ? "helpers" : comm;
      const f = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8").split(") ")[1].split(" ");
      out.set(name, (out.get(name) ?? 0) + (Number(f[11]) + Number(f[12])) * 1e4);
    } catch {
      // the thread ended
    }
  }
  return out;
}

const tmp = mkdtempSync(path.join(os.tmpdir(), "svc-threads-"));
const procs = [];
try {
  const up = await startStandinGateway(tmp);
  procs.push(up.proc);
  const targets: Record<string, { url: string; headers: Record<string, string>; pid: number }> = {};
  const add = async (name: string, env: Record<string, string>) => {
    const s = await startSvcProcess({ home: path.join(tmp, name), config: up.cfg, core: 1, env });
    procs.push(s.proc);
    targets[name] = { url: `${s.url}/v1/chat/completions`, headers: { authorization: `Bearer ${await gatewayKey(s.url)}` }, pid: s.proc.pid! };
  };
  await add("svc", gatewayEnv);
  if (process.env.TRACED === "1") {
    const c = await startCollector();
    procs.push(c.proc);
    await add("traced", { ...gatewayEnv, OTEL_EXPORTER_OTLP_ENDPOINT: c.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf", OTEL_TRACES_SAMPLER: "always_on" });
  }
  for (const t of Object.values(targets)) await loadRun({ ...t, body: BODY, connections: 8, seconds: 2 });
  const per: Record<string, Map<string, number[]>> = {};
  for (let i = 0; i < rounds; i++) {
    for (const [name, t] of i % 2 ? Object.entries(targets).reverse() : Object.entries(targets)) {
      const before = threads(t.pid);
      const r = await loadRun({ ...t, body: BODY, connections: 50, seconds });
      const after = threads(t.pid);
      const n = r.rps * seconds;
      for (const [k, v] of after) ((per[name] ??= new Map()).get(k) ?? (per[name].set(k, []), per[name].get(k)!)).push((v - (before.get(k) ?? 0)) / n);
    }
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  for (const [name, m] of Object.entries(per)) {
    const rows = [...m].map(([k, xs]) => [k, med(xs)] as const).filter(([, v]) => v > 0.05).sort((a, b) => b[1] - a[1]);
    console.log(`${name}: ` + rows.map(([k, v]) => `${k} ${v.toFixed(1)} µs`).join(", "));
  }
} finally {
  for (const p of procs) p.kill("SIGTERM");
  await new Promise((r) => setTimeout(r, 300));
  rmSync(tmp, { recursive: true, force: true });
}
