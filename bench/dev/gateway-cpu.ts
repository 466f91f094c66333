// Dev tool (not a test): CPU per request of svc beside the bare Node gateway (and, with
// BENCH_BASELINE=<another svc checkout, built>, that checkout's svc), in alternating rounds at 50
// connections: the gateway bench's load-robust measure alone, for checking a hot-path change on a
// busy machine. Each round's line splits the CPU into system time and the main thread's against the
// helper threads' (V8's and libuv's).
// RATE=<requests/s> holds every path to that rate (autocannon's overallRate): on a machine too
// busy for any path to saturate its core, CPU per request at the same rate still compares the
// paths' own work, where at full speed their idle wake-ups would be divided by unequal counts.
// TRACED=1 adds "traced": the same svc with traces on (100% sampled, OTLP http/protobuf to a
// loopback collector in its own process on core 0, bench/otlp-collector.ts), so tracing's cost per
// request is paired. Every other round runs the paths in reverse order. The last line gives each
// path's CPU a request minus svc's, paired round by round (the median of those differences).
// TRACED_B="K=V K2=V2" adds "traced-b", traced with those variables too (an OTEL_BSP_* setting, say).
// CONN=1 runs one connection instead of 50 and adds each path's p50: the one-connection added
// latency over bare (the issue's second must-show), paired round by round.
//   [RATE=n] [CONN=n] [TRACED=1] [TRACED_B=…] node --import tsx bench/dev/gateway-cpu.ts [rounds] [seconds]
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { cpuMicros, firstLine, gatewayEnv, gatewayKey, loadRun, start, startStandinGateway, startSvcProcess } from "../processes";
import { startCollector } from "../otlp-collector";

const BODY = JSON.stringify({ model: "bench-model", messages: [{ role: "user", content: "Say hello." }], max_tokens: 16 });
/** user + system CPU of a process, µs (/proc; 100 ticks a second) */
const cpu = (pid: number) => cpuMicros(pid) ?? NaN;
/** system CPU (µs) of the process, and user + system CPU of its main thread (whose id is the
 * process's; the rest is V8's and libuv's helper threads) */
const statOf = (file: string) => readFileSync(file, "utf8").split(") ")[1].split(" ");
const sys = (pid: number) => Number(statOf(`/proc/${pid}/stat`)[12]) * 1e4;
const mainCpu = (pid: number) => { const f = statOf(`/proc/${pid}/task/${pid}/stat`); return (Number(f[11]) + Number(f[12])) * 1e4; };

const rounds = Number(process.argv[2] ?? 3);
const seconds = Number(process.argv[3] ?? 5);
const rate = process.env.RATE ? Number(process.env.RATE) : undefined;
const connections = process.env.CONN ? Number(process.env.CONN) : 50;
const tmp = mkdtempSync(path.join(os.tmpdir(), "svc-cpu-"));
const procs = [];
try {
  const up = await startStandinGateway(tmp);
  procs.push(up.proc);
  const cfg = up.cfg;
  const targets: Record<string, { url: string; headers: Record<string, string>; pid: number }> = {};
  const svcAt = async (name: string, checkout?: string, env: Record<string, string> = gatewayEnv) => {
    const s = await startSvcProcess({ home: path.join(tmp, name), config: cfg, core: 1, env, checkout });
    procs.push(s.proc);
    targets[name] = { url: `${s.url}/v1/chat/completions`, headers: { authorization: `Bearer ${await gatewayKey(s.url)}` }, pid: s.proc.pid! };
  };
  await svcAt("svc");
  if (process.env.BENCH_BASELINE) await svcAt("baseline", path.resolve(process.env.BENCH_BASELINE));
  const collector = process.env.TRACED === "1" || process.env.TRACED_B ? await startCollector() : undefined;
  if (collector) procs.push(collector.proc);
  const tracedEnv = { ...gatewayEnv, OTEL_EXPORTER_OTLP_ENDPOINT: collector?.url ?? "", OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf", OTEL_TRACES_SAMPLER: "always_on" };
  if (process.env.TRACED === "1") await svcAt("traced", undefined, tracedEnv);
  if (process.env.TRACED_B) await svcAt("traced-b", undefined, { ...tracedEnv, ...Object.fromEntries(process.env.TRACED_B.trim().split(/\s+/).map((kv) => kv.split("=") as [string, string])) });
  // ENV_B="K=V ...": the same svc with extra environment (e.g. glibc malloc settings) as "svc-b"
  if (process.env.ENV_B) await svcAt("svc-b", undefined, { ...gatewayEnv, ...Object.fromEntries(process.env.ENV_B.trim().split(/\s+/).map((kv) => kv.split("=") as [string, string])) });
  const bare = start(1, process.execPath, ["--import", "tsx", "bench/bare-gateway.ts", up.url]);
  procs.push(bare);
  targets.bare = { url: `http://127.0.0.1:${Number(await firstLine(bare))}/v1/chat/completions`, headers: {}, pid: bare.pid! };
  for (const t of Object.values(targets)) await loadRun({ ...t, body: BODY, connections: 8, seconds: 2 });
  const per: Record<string, number[]> = {};
  const p50s: Record<string, number[]> = {};
  for (let i = 0; i < rounds; i++) {
    for (const [name, t] of i % 2 ? Object.entries(targets).reverse() : Object.entries(targets)) {
      const c0 = cpu(t.pid);
      const s0 = sys(t.pid);
      const m0 = mainCpu(t.pid);
      const r = await loadRun({ ...t, body: BODY, connections, seconds, ...(rate ? { rate } : {}) });
      const us = (cpu(t.pid) - c0) / (r.rps * seconds);
      const sysUs = (sys(t.pid) - s0) / (r.rps * seconds);
      const mainUs = (mainCpu(t.pid) - m0) / (r.rps * seconds);
      (per[name] ??= []).push(us);
      (p50s[name] ??= []).push(r.p50);
      console.log(`round ${i + 1} ${name}: ${Math.round(r.rps)} req/s, ${Math.round(us)} µs CPU/request (${Math.round(sysUs)} system; ${Math.round(mainUs)} main thread, ${Math.round(us - mainUs)} helper threads), p50 ${r.p50.toFixed(3)} ms${r.non2xx + r.errors ? `, ${r.non2xx + r.errors} failed` : ""}`);
    }
  }
  if (collector) { const n = await collector.counts(); console.log(`collector: ${n.posts} export requests, ${Math.round(n.bytes / Math.max(1, n.posts))} bytes each`); }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  // added p50 over bare, paired within each round (both ran back to back)
  const added = (name: string) => med(p50s[name].map((p, i) => p - p50s.bare[i])).toFixed(3);
  console.log(`p50 at ${connections} connection(s), median of rounds: ` + Object.entries(p50s).map(([n, xs]) => `${n} ${med(xs).toFixed(3)} ms`).join("; ") + `; added over bare (paired): svc ${added("svc")} ms` + (p50s.baseline ? `, baseline ${added("baseline")} ms` : ""));
  console.log(Object.entries(per).map(([n, xs]) => `${n} ${Math.round(med(xs))} µs`).join("; ") + ` (median CPU/request); bare / svc ${(med(per.bare) / med(per.svc)).toFixed(2)}` + (per.baseline ? `; svc / baseline ${(med(per.svc) / med(per.baseline)).toFixed(2)}` : "") + (per["svc-b"] ? `; svc-b / svc ${(med(per["svc-b"]) / med(per.svc)).toFixed(2)}` : "") + (per.traced ? `; svc / traced ${(med(per.svc) / med(per.traced)).toFixed(2)}, traced - svc ${Math.round(med(per.traced) - med(per.svc))} µs` : ""));
  // each path's CPU over svc's in the same round, as the median of those differences (lowest to
  // highest in brackets): steadier than the difference of medians when svc's own cost drifts
  // from round to round, as it does on a shared machine
  const paired = Object.keys(per).filter((n) => n !== "svc").map((n) => {
    const d = per[n].map((x, i) => x - per.svc[i]).sort((a, b) => a - b);
    return `${n} ${Math.round(med(d))} µs (${Math.round(d[0])} to ${Math.round(d[d.length - 1])})`;
  });
  console.log(`minus svc, paired by round: ${paired.join("; ")}`);
} finally {
  for (const p of procs) p.kill("SIGTERM");
  await new Promise((r) => setTimeout(r, 300));
  rmSync(tmp, { recursive: true, force: true });
}
