// Scale-out benchmark (README "Scale-out"): the same gateway load against one replica on the
// embedded SQLite store, one replica on PostgreSQL + Redis, and two replicas sharing them
// (autocannon spreads its connections over both URLs): aggregate requests/s and the p50/p99
// each setup adds over calling the stand-in upstream directly. One run. Skipped, with the
// reason, when PostgreSQL 15 / Redis 7 are not installed. Then detached agent tasks (dispatch to
// finished, bench/scale-tasks.ts) on the SQLite replica and on a PostgreSQL replica, and memory
// search p50/p99 on each store (bench/scale-memory.ts).
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadRun, sleep, startStandin, startSvcProcess, standinProvider } from "./processes";
import { table, type Section } from "./report";
import { missingServices, startPostgres, startRedis, type Service } from "../test/helpers/services";
import { BENCH_AGENT, agentReady, taskRate, type TaskRate } from "./scale-tasks";
import { memorySearchOnStores } from "./scale-memory";
import { OpsProbe, PG_STATS, opsReport, type OpsPerRequest } from "./scale-ops";

const lat = (x: number) => `${x.toFixed(Math.abs(x) < 10 ? 3 : 1)} ms`;
const BODY = JSON.stringify({ model: "bench-model", messages: [{ role: "user", content: "Say hello." }], max_tokens: 16 });
const ADMIN = "sk-svc-benchadminkey0000000000000000000000000000";

/** What CPU profiles of a replica on PostgreSQL + Redis under load showed (bench/dev/scale-profile.ts). */
const PROFILE_FINDINGS = [
  "Where the time went (CPU profile of one PostgreSQL + Redis replica at 50 connections, `node --import tsx bench/dev/scale-profile.ts`, 2026-11-28, machine load average 13-21, so shares rather than absolute times): the replica's own work differed from the SQLite replica's in two places. ioredis wrote every command with its own write(2): 6.3% of all samples, about 14% of the busy time, now one write per event-loop turn for the admissions (auto-pipelining; a settle is still written at once, before its answer, so a client moving to another replica finds its spend counted). The audit row's write-ahead was a SQLite INSERT and commit a row (2.8%, plus the deletes after each batch), now a line appended to a journal file (0.4%).",
  "Redis, not the replica, is most of the remaining cost in shared mode: each request runs limits.lua (revocation, the rate bucket and hour window, the key's budget and token checks, then the reservation on the entities a check reads and the request count on key, team and organization: about 28 commands inside the script) and settle.lua (about 24). PostgreSQL has nothing on the request path: the audit batch (one multi-row INSERT per 64 rows, without BEGIN/COMMIT), the counters copy once a second, and the task, webhook and memory-job polls, which are per second rather than per request. On a 2-core machine Redis's thread takes its CPU from the replica, which is why one shared replica here stays well under the SQLite one; with Redis and PostgreSQL on their own machines the replica's cost per request is close to the SQLite replica's (the journal append against the reservation journal's group commit).",
  "Redis's CPU a request, measured apart from the replica (`node --import tsx bench/dev/scale-redis-cpu.ts <revision>`: Redis's main-thread CPU time from INFO cpu, not wall time, for the bench key's admission and settle with 50 in flight, two versions of the scripts in one run; 2026-11-28, load average 12-20): 190-230 µs with the 69 commands the two scripts run. A layout with one hash per entity (all its counters, reservations by lapse time and the rate bucket), read with one HMGET and written with one HSET, ran 25 commands and cost more, 270-330 µs, so it was not kept: inside a script the cost follows the fields and values that cross between Lua and Redis, not the commands (EVAL loops on this machine: HMGET of 17 fields 6.0 µs against 1.4 µs for 2, HSET of 7 fields 3.2 µs, HINCRBY 1.8 µs, HINCRBYFLOAT 3.6 µs, cjson.decode of the request 5.7 µs, TIME 1.3 µs). Since then (2026-11-28, load average 9-15, three runs each of the two versions): 159-166 µs against 192-222 µs for the scripts before, about 25% less, with 53 commands instead of 67. A reservation is now held only on the entities a budget or token check reads (the bench key's team and organization have none: 4 HINCRBYFLOAT and a ZADD at admission, a ZREM and 4 HINCRBYFLOAT at settle fewer), reservations are whole numbers added with HINCRBY (the media budget test's extra image was Lua's -0: a zero release reached Redis as \"-0\", HINCRBY refused it after the ZREM had run, and the spend was added only at the retry; zero changes are now skipped), the settle marks its entities with one ZADD, and the admission's JSON leaves out the checks' refusal-only fields. Inside the scripts most of Redis's time is now the Lua interpreter itself (decoding the request, building key names) rather than the commands. What would lower it further: the team's and organization's request and spend counts added per second from each replica rather than per request (18 of the 34 HINCRBY a request), and the settle carried in the next admission's script call.",
  "The one-connection gap, timed inside the replica (2026-11-28, `NOPROF=1 node --import tsx bench/dev/scale-profile.ts 1 6`, machine idle, load average 0.7): p50 1.306 ms against 0.766 ms with `LOCAL=1` (SQLite), a gap of 0.54 ms; the admission's EVALSHA took 507 µs from call to answer on average and the settle's 499 µs, although Redis spends about 65 µs of CPU on each (scale-redis-cpu) and a bare sequential EVALSHA round trip on the same machine takes 133 µs (189 µs auto-pipelined, `node --import tsx bench/dev/scale-admit-latency.ts` for the admission: about 80 µs more). So most of an admission's wait is the 2 cores being shared by the replica, Redis, the load generator and the stand-in, not Redis's work. Writing an admission alone at once rather than auto-pipelined served fewer requests/s in 5 of 5 alternating paired runs at load average 3-5 and was not kept.",
].join("\n\n");

interface Load { rps: number; mean: number; p50: number; p99: number; errors: number; non2xx: number }

function load(url: string | string[], headers: Record<string, string>, connections: number, seconds: number): Promise<Load> {
  return loadRun({ url, headers, body: BODY, connections, seconds });
}

async function api(url: string, p: string, body: unknown, key = ADMIN): Promise<{ status: number; json: any }> {
  const r = await fetch(url + p, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: r.status, json: await r.json().catch(() => null) };
}

/** A key with rate, budget and token limits: every request goes through the limits. */
async function makeKey(url: string): Promise<string> {
  for (let i = 0; i < 100; i++) {
    const r = await api(url, "/v1/api-keys", {
      name: "bench", key_type: "user", organization_id: "org-bench", team_id: "team-bench", user_id: "u1",
      rate_limits: { per_minute: 100_000_000, burst: 100_000_000, per_hour: 1_000_000_000 },
      budget_limits: { daily: 1_000_000, monthly: 1_000_000 },
      token_limits: { per_request_max: 4096, daily: 1_000_000_000_000 },
    });
    if (r.status === 201) return r.json.api_key;
    await sleep(100);
  }
  throw new Error("key creation failed");
}

/** Wait until a replica serves the key (it learns it from the pub/sub message). */
async function served(url: string, key: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const r = await fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: BODY });
    if (r.status === 200) return;
    await sleep(100);
  }
  throw new Error(`replica ${url} does not serve the key`);
}

export async function scaleBench(): Promise<Section> {
  const title = "Scale-out: SQLite vs PostgreSQL + Redis, 1 and 2 replicas";
  let missing: string | null;
  try {
    missing = missingServices();
  } catch (e) {
    missing = String((e as Error).message);
  }
  if (missing) return { title, body: `Skipped: ${missing}.`, data: { skipped: missing } };

  const tmp = mkdtempSync(path.join(os.tmpdir(), "svc-bench-scale-"));
  const procs: ChildProcess[] = [];
  const services: Service[] = [];
  const seconds = Number(process.env.BENCH_SECONDS ?? 5);
  try {
    const up = await startStandin();
    procs.push(up.proc);
    const upstream = up.url;
    const cfg = path.join(tmp, "config");
    mkdirSync(cfg);
    writeFileSync(path.join(cfg, "gateway.yaml"), standinProvider(upstream));
    writeFileSync(path.join(cfg, "agent.yaml"), BENCH_AGENT);
    const [pg, redis] = await Promise.all([startPostgres(PG_STATS), startRedis()]);
    services.push(pg, redis);
    const base = { SVC_ADMIN_KEY: ADMIN, BENCH_UPSTREAM_KEY: "sk-upstream-bench" };
    const shared = { ...base, SVC_DATABASE_URL: pg.url, SVC_REDIS_URL: redis.url };
    const local = { ...base, SVC_DATABASE_URL: "", SVC_REDIS_URL: "" };

    const sqlite = await startSvcProcess({ home: path.join(tmp, "sqlite"), config: cfg, core: 1, env: local });
    procs.push(sqlite.proc);
    const r1 = await startSvcProcess({ home: path.join(tmp, "r1"), config: cfg, core: 1, env: shared });
    procs.push(r1.proc);
    const r2 = await startSvcProcess({ home: path.join(tmp, "r2"), config: cfg, core: 0, env: shared });
    procs.push(r2.proc);

    const keySqlite = await makeKey(sqlite.url);
    const keyShared = await makeKey(r1.url);
    await served(r1.url, keyShared);
    await served(r2.url, keyShared);

    const chat = (u: string) => `${u}/v1/chat/completions`;
    const auth = (k: string) => ({ authorization: `Bearer ${k}` });
    const targets: Array<[string, string | string[], Record<string, string>]> = [
      ["direct", `${upstream}/chat/completions`, { authorization: "Bearer sk-upstream-bench" }],
      ["1 replica, SQLite", chat(sqlite.url), auth(keySqlite)],
      ["1 replica, PostgreSQL + Redis", chat(r1.url), auth(keyShared)],
      ["2 replicas, PostgreSQL + Redis", [chat(r1.url), chat(r2.url)], auth(keyShared)],
    ];
    for (const [, u, h] of targets) await load(u, h, 4, 2); // warm-up
    const loadBefore = os.loadavg()[0];
    const res: Record<string, Record<number, Load>> = {};
    // the shared services' work during the 1-replica run at 50 connections (bench/scale-ops.ts)
    const probe = await OpsProbe.open(redis.url, pg.url);
    let ops: OpsPerRequest | undefined;
    for (const c of [1, 50]) {
      for (const [name, u, h] of targets) {
        const measured = c === 50 && name === "1 replica, PostgreSQL + Redis";
        const before = measured ? await probe.snapshot() : undefined;
        (res[name] ??= {})[c] = await load(u, h, c, seconds);
        if (before) {
          await sleep(1500); // the settlements, audit batches and counter copy after the answers
          ops = OpsProbe.perRequest(before, await probe.snapshot(), res[name][c].rps * seconds);
        }
      }
    }
    await probe.close();
    const loadAfter = os.loadavg()[0];

    // detached tasks: the same number on each store, 16 dispatching-and-polling loops
    const nTasks = Number(process.env.BENCH_TASKS ?? 200);
    const tasks: Record<string, TaskRate> = {};
    for (const [name, url] of [["1 replica, SQLite", sqlite.url], ["1 replica, PostgreSQL + Redis", r1.url]] as const) {
      await agentReady(url, ADMIN);
      await taskRate(url, ADMIN, 16, 4); // warm-up
      tasks[name] = await taskRate(url, ADMIN, nTasks, 16);
    }

    // memory search on each store (bench/scale-memory.ts), on the same PostgreSQL
    const memory = await memorySearchOnStores(pg.url);

    const rows: (string | number)[][] = [];
    for (const c of [1, 50]) {
      const d = res.direct[c];
      for (const [name] of targets) {
        const r = res[name][c];
        const added = (x: number) => (name === "direct" ? "-" : lat(x));
        rows.push([c, name, Math.round(r.rps), lat(r.p50), lat(r.p99), added(r.p50 - d.p50), added(r.p99 - d.p99), r.errors + r.non2xx]);
      }
    }
    const opsPart = ops ? opsReport(ops, res["1 replica, PostgreSQL + Redis"][50].rps) : undefined;
    const body = [
      `Load: autocannon, ${seconds} s per cell, one run, non-streaming chat completions with a key carrying rate, budget and token limits (each request checks and reserves them: in memory with SQLite, one Redis script with PostgreSQL + Redis). PostgreSQL 15 and Redis 7 run as throwaway local servers (not pinned). Pinning on this 2-core machine: the SQLite replica and replica 1 on core 1, replica 2 on core 0 (with autocannon and the upstream), so the 2-replica figure shows the cost of coordination more than a gain from a second machine.`,
      "",
      `Machine load average (1 min) before the runs ${loadBefore.toFixed(1)}, after ${loadAfter.toFixed(1)} on ${os.cpus().length} cores: well above ~2 means other work shared the cores and every figure here is low (compare "direct", the stand-in called without svc).`,
      "",
      table(["connections", "setup", "requests/s", "p50", "p99", "added p50", "added p99", "errors+non-2xx"], rows),
      "",
      `2 replicas / 1 replica (PostgreSQL + Redis) requests/s at 50 connections: ${(res["2 replicas, PostgreSQL + Redis"][50].rps / res["1 replica, PostgreSQL + Redis"][50].rps).toFixed(2)}; PostgreSQL + Redis / SQLite at 50: ${(res["1 replica, PostgreSQL + Redis"][50].rps / res["1 replica, SQLite"][50].rps).toFixed(2)}.`,
      "",
      ...(opsPart ? [...opsPart.lines, "", PROFILE_FINDINGS, ""] : []),
      `Detached agent tasks: ${nTasks} tasks of one model call each (to the stand-in), 16 loops each dispatching a task and polling it (every 5 ms) until it has finished.`,
      "",
      table(["setup", "tasks/s", "dispatch to finished p50", "p99", "failed"], Object.entries(tasks).map(([n, t]) => [n, t.perSecond.toFixed(1), lat(t.p50), lat(t.p99), t.failed])),
      "",
      `Memory search: ${memory.facts.toLocaleString("en")} facts in one agent's namespace, ${memory.queries} queries (half questions, half three common words), top 10 over every kind through each store's searcher (lexical: no embedding model; no HTTP); recall@5 of the 20-question set of \`npm run bench memory\`. PostgreSQL: tsvector rows with a GIN index, ranked with BM25 computed in SQL${memory.postgresql.pgvector ? "" : " (pgvector not installed; not used either way yet)"}.`,
      "",
      table(["store", "search p50", "p99", "recall@5"], [
        ["SQLite (FTS5, BM25)", lat(memory.sqlite.p50), lat(memory.sqlite.p99), memory.sqlite.recallAt5.toFixed(2)],
        ["PostgreSQL (tsvector, GIN, BM25)", lat(memory.postgresql.p50), lat(memory.postgresql.p99), memory.postgresql.recallAt5.toFixed(2)],
      ]),
    ].join("\n");
    return { title, body, data: { results: res, shared: opsPart?.data, tasks, memory } };
  } finally {
    for (const p of procs) p.kill("SIGTERM");
    await sleep(1500);
    for (const s of services) await s.stop().catch(() => undefined);
    rmSync(tmp, { recursive: true, force: true });
  }
}
