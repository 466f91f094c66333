// Dev tool (not a test): svc and another checkout (BASE=<dir>, installed) under the gateway bench's
// load, taking turns; for each run, requests/s, CPU a request (main thread, other threads: V8's GC
// helpers and the store's thread) and, from --trace-gc-nvp, how many young-generation GCs promoted
// more than HIGH_KB (a server whose finished requests outlive scavenges promotes ~1 MB each).
// The CPU figures are steadier than requests/s on a shared machine whose speed drifts.
// TRACED=1 runs both with traces on (100% sampled, OTLP http/protobuf to a loopback sink here), to
// compare two span pipelines by what they promote and how often the old generation is marked.
//   BASE=/path/to/checkout [TRACED=1] [CONNS=50] [RATE=requests/s] [SECS=6] [RUNS=3] node --import tsx bench/dev/gateway-gc.ts
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { gatewayEnv, gatewayKey, loadRun, sleep, startStandinGateway, startSvcProcess } from "../processes";
import { otlpSink } from "../tracing";

const conns = Number(process.env.CONNS ?? 50);
const rate = process.env.RATE ? Number(process.env.RATE) : undefined;
const secs = Number(process.env.SECS ?? 6);
const runs = Number(process.env.RUNS ?? 3);
const HIGH_KB = 600;
const TICK = 100; // USER_HZ: /proc's clock ticks a second on Linux
const BODY = JSON.stringify({ model: "bench-model", messages: [{ role: "user", content: "Say hello." }], max_tokens: 16 });

const tmp = mkdtempSync(path.join(os.tmpdir(), "svc-gw-gc-"));
const up = await startStandinGateway(tmp);
const cfg = up.cfg;
const env = process.env.TRACED === "1" ? { ...gatewayEnv, OTEL_EXPORTER_OTLP_ENDPOINT: await otlpSink(), OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf", OTEL_TRACES_SAMPLER: "always_on" } : gatewayEnv;

interface Server { name: string; pid: number; url: string; key: string; promoted: number[]; marks: { n: number }; kill(): void }

async function server(name: string, checkout?: string): Promise<Server> {
  const promoted: number[] = [];
  const marks = { n: 0 };
  let partial = "";
  const s = await startSvcProcess({
    home: path.join(tmp, name), config: cfg, core: 1, checkout, env, nodeArgs: ["--trace-gc-nvp"],
    stdout: (chunk) => {
      const lines = (partial + chunk.toString()).split("\n");
      partial = lines.pop()!;
      for (const l of lines) {
        if (l.includes(" gc=s ")) promoted.push(Number(/ promoted=(\d+)/.exec(l)?.[1] ?? 0));
        else if (/ gc=m[sc] /.test(l)) marks.n++;
      }
    },
  });
  return { name, pid: s.proc.pid!, url: s.url, key: await gatewayKey(s.url), promoted, marks, kill: () => s.proc.kill("SIGTERM") };
}

/** CPU seconds of the process's main thread and of its other threads. */
function cpu(pid: number): { main: number; other: number } {
  const out = { main: 0, other: 0 };
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    const stat = readFileSync(`/proc/${pid}/task/${t}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const s = (Number(f[11]) + Number(f[12])) / TICK; // utime + stime
    if (Number(t) === pid) out.main += s;
    else out.other += s;
  }
  return out;
}

const servers = [await server("svc"), ...(process.env.BASE ? [await server("base", path.resolve(process.env.BASE))] : [])];
try {
  const load = (s: Server, seconds: number) => loadRun({ url: `${s.url}/v1/chat/completions`, headers: { authorization: `Bearer ${s.key}` }, body: BODY, connections: conns, seconds, rate });
  for (const s of servers) await load(s, 3); // warm-up
  for (let i = 0; i < runs; i++) {
    for (const s of servers) {
      const gcBefore = s.promoted.length;
      const marksBefore = s.marks.n;
      const a = cpu(s.pid);
      const r = await load(s, secs);
      const b = cpu(s.pid);
      const n = r.rps * secs;
      const gcs = s.promoted.slice(gcBefore);
      const high = gcs.filter((x) => x > HIGH_KB * 1024).length;
      console.log(`${s.name}: ${Math.round(r.rps)} requests/s, CPU a request ${(((b.main - a.main) / n) * 1e6).toFixed(1)} µs main thread + ${(((b.other - a.other) / n) * 1e6).toFixed(1)} µs others; ${high} of ${gcs.length} scavenges promoted > ${HIGH_KB} KB, ${Math.round(gcs.reduce((x, y) => x + y, 0) / n)} B promoted a request, ${s.marks.n - marksBefore} mark-compacts`);
    }
  }
} finally {
  for (const s of servers) s.kill();
  up.proc.kill();
  await sleep(500);
  rmSync(tmp, { recursive: true, force: true });
}
