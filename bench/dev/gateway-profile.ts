// Dev tool (not a test): svc's gateway hot path profiled: `svc serve` (pinned to core 1, the
// gateway bench's key and manifests) under autocannon at 50 connections, with node's --cpu-prof;
// prints CPU per request and the top functions by self and inclusive time over the measured run
// only (start-up and warm-up left out), and leaves the .cpuprofile in the temp dir.
// TRACED=1: svc with traces on (100% sampled, OTLP http/protobuf to a loopback collector in its
// own process on core 0, bench/otlp-collector.ts), so tracing's in-situ cost shows in the profile.
// SAMPLER=always_off (or another OTEL_TRACES_SAMPLER) traces with that sampler instead.
// NODE_ARGS="--flag …" adds flags to svc's node; STDOUT=<file> keeps svc's standard output (--trace-gc's lines).
//   [TRACED=1] [PROFILE_JSON=file] [NODE_ARGS=…] [STDOUT=file] [PROFILE=0] node --import tsx bench/dev/gateway-profile.ts [seconds]
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { cpuMicros, gatewayEnv, gatewayKey, loadRun, startStandinGateway, startSvcProcess } from "../processes";
import { startCollector } from "../otlp-collector";

const BODY = JSON.stringify({ model: "bench-model", messages: [{ role: "user", content: "Say hello." }], max_tokens: 16 });
const cpu = (pid: number) => cpuMicros(pid) ?? NaN;

const seconds = Number(process.argv[2] ?? 8);
/** the measured run's start and end (µs, the monotonic clock V8's profile timestamps use) */
const window = [0, Infinity];
/** the gateway's CPU per request over the measured run, µs */
let perRequest = NaN;
const tmp = mkdtempSync(path.join(os.tmpdir(), "svc-prof-"));
const up = await startStandinGateway(tmp);
const cfg = up.cfg;
const profDir = path.join(tmp, "prof");
const collector = process.env.TRACED === "1" ? await startCollector() : undefined;
const sink = collector?.url;
const env = sink ? { ...gatewayEnv, OTEL_EXPORTER_OTLP_ENDPOINT: sink, OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf", OTEL_TRACES_SAMPLER: process.env.SAMPLER ?? "always_on" } : gatewayEnv;
const svc = await startSvcProcess({ home: path.join(tmp, "home"), config: cfg, core: 1, env, nodeArgs: [...(process.env.NODE_ARGS?.split(" ").filter(Boolean) ?? []), ...(process.env.PROFILE === "0" ? [] : ["--cpu-prof", `--cpu-prof-dir=${profDir}`])], stdout: process.env.STDOUT ? (c) => appendFileSync(process.env.STDOUT!, c) : undefined });
try {
  const key = await gatewayKey(svc.url);
  const target = { url: `${svc.url}/v1/chat/completions`, headers: { authorization: `Bearer ${key}` }, body: BODY };
  await loadRun({ ...target, connections: 4, seconds: 2 });
  window[0] = Number(process.hrtime.bigint() / 1000n);
  const c0 = cpu(svc.proc.pid!);
  const r = await loadRun({ ...target, connections: 50, seconds });
  const used = cpu(svc.proc.pid!) - c0;
  window[1] = Number(process.hrtime.bigint() / 1000n);
  perRequest = used / (r.rps * seconds);
  console.log(`rps ${Math.round(r.rps)}, non2xx ${r.non2xx}, errors ${r.errors}, CPU/request ${Math.round(used / (r.rps * seconds))} us`);
} finally {
  svc.proc.kill("SIGTERM");
  up.proc.kill("SIGTERM");
  collector?.proc.kill("SIGTERM");
  await new Promise((res) => svc.proc.on("exit", res));
}
if (process.env.PROFILE !== "0") {
  const file = path.join(profDir, readdirSync(profDir)[0]);
  const prof = JSON.parse(readFileSync(file, "utf8")) as { startTime: number; nodes: { id: number; children?: number[]; callFrame: { functionName: string; url: string; lineNumber: number } }[]; samples: number[]; timeDeltas: number[] };
  const name = (id: number) => { const f = byId.get(id)!.callFrame; return `${f.functionName || "(anon)"} ${f.url.replace(/^.*\/(node_modules|dist)\//, "$1/")}:${f.lineNumber + 1}`; };
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  // self and inclusive time per function over the samples inside the measured run, idle left out
  const self = new Map<string, number>(), incl = new Map<string, number>();
  let total = 0, t = prof.startTime;
  prof.samples.forEach((id, i) => {
    t += prof.timeDeltas[i] ?? 0;
    if (t < window[0] || t > window[1] || byId.get(id)!.callFrame.functionName === "(idle)") return;
    total++;
    self.set(name(id), (self.get(name(id)) ?? 0) + 1);
    const seen = new Set<string>();
    for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) seen.add(name(n));
    for (const k of seen) incl.set(k, (incl.get(k) ?? 0) + 1);
  });
  const top = Number(process.env.TOP ?? 45);
  const show = (m: Map<string, number>, title: string) => {
    console.log(`-- ${title} (${total} busy samples)`);
    for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`);
  };
  show(self, "self");
  // PROFILE_JSON=<file> (as bench/dev/scale-profile.ts): every function's self time in µs a request
  // (its share of the busy samples times CPU a request), for diffing two runs
  if (process.env.PROFILE_JSON) writeFileSync(process.env.PROFILE_JSON, JSON.stringify(Object.fromEntries([...self].map(([k, v]) => [k, (v / total) * perRequest]))));
  show(incl, "inclusive");
  console.log(`profile: ${file}`);
}
