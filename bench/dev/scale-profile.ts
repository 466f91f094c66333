// Dev tool (not a test): one replica on PostgreSQL + Redis (or SQLite with LOCAL=1) under load,
// CPU-profiled (--cpu-prof), with the Redis commands and PostgreSQL statements per request
// (bench/scale-ops.ts), CPU a request by process group (replica, Redis, PostgreSQL, the rest of
// the machine), and the profile's heaviest functions by self time in µs a request.
// node --import tsx bench/dev/scale-profile.ts [connections] [seconds]
// NOPROF=1 no profile; LOCAL=1 SQLite; PIN_SERVICES=1 PostgreSQL and Redis on core 0 (as bench/scale.ts);
// PROFILE_JSON=<file> the self times as JSON, to compare two runs.
import { mkdtempSync, mkdirSync, writeFileSync, readdirSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { allPids, loadRun, pinTree, procStat, sleep, startStandin, startSvcProcess, standinProvider } from "../processes";
import { startPostgres, startRedis } from "../../test/helpers/services";
import { OpsProbe, PG_STATS } from "../scale-ops";

const conns = Number(process.argv[2] ?? 50);
const secs = Number(process.argv[3] ?? 8);
const ADMIN = "sk-svc-benchadminkey0000000000000000000000000000";
const BODY = JSON.stringify({ model: "bench-model", messages: [{ role: "user", content: "Say hello." }], max_tokens: 16 });
const tmp = mkdtempSync(path.join(os.tmpdir(), "svc-scale-prof-"));
const prof = path.join(tmp, "prof");
const up = await startStandin();
const cfg = path.join(tmp, "config");
mkdirSync(cfg);
writeFileSync(path.join(cfg, "gateway.yaml"), standinProvider(up.url));
const [pgs, redis] = await Promise.all([startPostgres(PG_STATS), startRedis()]);
const local = !!process.env.LOCAL;
// PIN_SERVICES=1: PostgreSQL (its postmaster; backends inherit) and Redis on core 0, away from the replica
if (process.env.PIN_SERVICES) for (const s of [pgs, redis]) pinTree(s.pid(), 0);
const env = { SVC_ADMIN_KEY: ADMIN, BENCH_UPSTREAM_KEY: "sk-upstream-bench", SVC_DATABASE_URL: local ? "" : pgs.url, SVC_REDIS_URL: local ? "" : redis.url };
// killed (a `timeout`, ^C): take the replica, the stand-in, PostgreSQL and Redis along, or they
// stay on the machine and load every later measurement
let replica: { kill(sig?: NodeJS.Signals): boolean } | undefined;
for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.once(sig, () => {
    replica?.kill("SIGKILL");
    up.proc.kill();
    void Promise.allSettled([pgs.stop(), redis.stop()]).then(() => process.exit(1));
  });
}
const svc = await startSvcProcess({ home: path.join(tmp, "r1"), config: cfg, core: 1, env, nodeArgs: process.env.NOPROF ? [] : ["--cpu-prof", `--cpu-prof-dir=${prof}`] });
replica = svc.proc;
let key = "";
for (let i = 0; i < 100 && !key; i++) {
  const r = await fetch(svc.url + "/v1/api-keys", {
    method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
    body: JSON.stringify({
      name: "bench", key_type: "user", organization_id: "org-bench", team_id: "team-bench", user_id: "u1",
      rate_limits: { per_minute: 100_000_000, burst: 100_000_000, per_hour: 1_000_000_000 },
      budget_limits: { daily: 1_000_000, monthly: 1_000_000 }, token_limits: { per_request_max: 4096, daily: 1_000_000_000_000 },
    }),
  });
  if (r.status === 201) key = ((await r.json()) as { api_key: string }).api_key;
  else await sleep(100);
}
const url = `${svc.url}/v1/chat/completions`;
const headers = { authorization: `Bearer ${key}` };
await loadRun({ url, headers, body: BODY, connections: 4, seconds: 2 });
const probe = await OpsProbe.open(redis.url, pgs.url);
const a = await probe.snapshot();
const cpuA = cpuByGroup(svc.proc.pid!);
const r = await loadRun({ url, headers, body: BODY, connections: conns, seconds: secs });
await sleep(1500); // the flushes after the answers
const b = await probe.snapshot();
const cpuB = cpuByGroup(svc.proc.pid!);
const served = r.rps * secs;
for (const [g, t] of cpuB) console.log(`cpu ${g} ${((t - (cpuA.get(g) ?? 0)) / served).toFixed(1)} us/request`);
const ops = OpsProbe.perRequest(a, b, r.rps * secs);
console.log(JSON.stringify({ rps: r.rps, p50: r.p50, p99: r.p99, errors: r.errors + r.non2xx }));
console.log(`redis round trips/request ${ops.redisCalls.toFixed(2)}`);
for (const x of ops.redis) console.log(`  redis ${x.cmd} ${x.perRequest.toFixed(3)}/req ${x.usecPerCall.toFixed(1)} us`);
console.log(`pg statements/request ${ops.pgCalls.toFixed(3)}`);
for (const x of ops.pg.slice(0, 15)) console.log(`  pg ${x.perRequest.toFixed(4)}/req ${x.msPerCall.toFixed(3)} ms ${x.rowsPerCall.toFixed(1)} rows  ${x.query}`);
await probe.close();
svc.proc.kill("SIGINT");
await new Promise((res) => svc.proc.once("exit", res));
up.proc.kill();
await pgs.stop();
await redis.stop();
if (!process.env.NOPROF) {
  const f = readdirSync(prof).find((x) => x.endsWith(".cpuprofile"));
  if (f) {
    const p = JSON.parse(readFileSync(path.join(prof, f), "utf8")) as { nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number } }>; samples: number[]; timeDeltas: number[] };
    // self time by function, in µs per request served under load (start-up and warm-up included)
    const byNode = new Map<number, number>();
    p.samples.forEach((s, i) => byNode.set(s, (byNode.get(s) ?? 0) + (p.timeDeltas[i + 1] ?? 0)));
    const self = new Map<string, number>();
    for (const n of p.nodes) {
      const us = byNode.get(n.id) ?? 0;
      if (!us) continue;
      const k = `${n.callFrame.functionName || "(anon)"} ${n.callFrame.url.replace(/^.*\/(dist|node_modules)\//, "$1/")}:${n.callFrame.lineNumber}`;
      self.set(k, (self.get(k) ?? 0) + us);
    }
    console.log(`profile ${path.join(prof, f)}`);
    if (process.env.PROFILE_JSON) writeFileSync(process.env.PROFILE_JSON, JSON.stringify(Object.fromEntries([...self].map(([k, us]) => [k, us / served]))));
    for (const [k, us] of [...self].sort((x, y) => y[1] - x[1]).slice(0, 40)) console.log(`  ${(us / served).toFixed(2)} us/req ${k}`);
  }
}
process.exit(0);

/** A PostgreSQL process by its role (its title: "postgres: autovacuum worker", "postgres: svc postgres [local] idle"…). */
function pgRole(pid: number): string {
  let title = "";
  try { title = readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " "); } catch { /* gone */ }
  const m = /^postgres: (autovacuum|walwriter|checkpointer|background writer|logical replication|autovacuum launcher)/.exec(title);
  return `postgres ${m ? m[1] : title.startsWith("postgres: ") ? "backends" : "postmaster"}`;
}

/** CPU time (µs, user + system) by process group, over every process on the machine. */
function cpuByGroup(replicaPid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const pid of allPids()) {
    const st = procStat(pid);
    if (!st) continue;
    const g = pid === replicaPid ? "replica" : st.comm.startsWith("postgres") ? pgRole(pid) : st.comm.startsWith("redis") ? "redis" : st.comm.startsWith("node") ? "other-node" : "other";
    out.set(g, (out.get(g) ?? 0) + st.cpuMicros);
  }
  let all = 0;
  for (const v of out.values()) all += v;
  out.set("all-live-processes", all);
  // the whole machine, the load generator (gone by the second reading) included; /proc/stat counts
  // 1/100 s ticks
  const c = readFileSync("/proc/stat", "utf8").split("\n")[0]!.split(/\s+/).slice(1).map(Number);
  out.set("machine-busy", (c[0]! + c[1]! + c[2]! + c[5]! + c[6]! + c[7]!) * 1e4);
  out.set("machine-idle", (c[3]! + c[4]!) * 1e4);
  return out;
}
