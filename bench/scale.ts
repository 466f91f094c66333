// Scale-out benchmark (README "Scale-out"): the same gateway load against one replica on the
// embedded SQLite store, one replica on PostgreSQL + Redis, and two replicas sharing them
// (autocannon spreads its connections over both URLs): aggregate requests/s and the p50/p99
// each setup adds over calling the stand-in upstream directly, one run each; then, at 50
// connections, SQLite and one PostgreSQL + Redis replica again in alternating pairs
// (BENCH_SCALE_PAIRS, default 5 with the first), for the ratio's median. Skipped, with the
// reason, when PostgreSQL 15 / Redis 7 are not installed. Then detached agent tasks (dispatch to
// finished, bench/scale-tasks.ts) on the SQLite replica and on a PostgreSQL replica, and memory
// search p50/p99 on each store (bench/scale-memory.ts).
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadRun, pinTree, sleep, startStandin, startSvcProcess, standinProvider } from "./processes";
import { alternatingPairs, cpuLine, median as medianOf, type Load } from "./scale-pairs";
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
  "Where the time went (2026-11-29, one replica at 50 connections, `node --import tsx bench/dev/scale-profile.ts`, which reads every process's CPU from /proc and the replica's profile in µs a request, machine otherwise idle). Before this round Redis ran two scripts a request (admission, then settle): 2.0 EVALSHA and ~75 µs of Redis's one thread a request, and this ratio was 0.46-0.48. After it, with PostgreSQL and Redis left to the scheduler, the shared replica spent 92 µs of CPU a request against the SQLite replica's 76, and Redis 17 and PostgreSQL 13 more. In the replica's profile the writes to Redis's socket cost 3.0 µs a request and the other socket writes 2.4 µs more than with SQLite: on the replica's own core, each write that wakes Redis or PostgreSQL switches to it. With both on core 0 (PIN_SERVICES=1, as this bench now runs) the same replica spent 87 µs a request and served ~9% more. What the shared replica does that the SQLite one does not, in µs a request: the Redis call and its reply 4-6 (the payload 1.7, ioredis 1.5, the socket write 1.1-3.0), the audit journal 3.5 (its line 1.3, the write(2) 2.2), the PostgreSQL batch's array parameters 2.4, now 0.6 (prisma/repos/postgres.ts builds the array literals itself, without node-postgres's two regular-expression replaces a value), more garbage collection 2; and what only the SQLite one does: its audit insert 7, its write-ahead reservations 1.4, its in-memory limits 1.5.",
  "Redis: a replica now sends the admissions of one event-loop turn and the settles of the requests it answered since its last call as one call of engines/cluster/limits.lua. The script reads each counter once a call, decides each admission in order (so limits stay exact), and writes the sums. What requests of one key share (entities, limits, day, month) is sent once a call as a shape, and each request as a short array (engines/cluster/turn-payload.ts). The reservations a call's settles release are looked up and removed in one ZMSCORE and one ZREM per entity. Redis's CPU by call size (`node --import tsx bench/dev/scale-redis-cpu.ts 1,10,50`, the bench's key, admissions with the previous call's settles): 63 µs a request at one request a call, 12 µs at 10, 6.5 µs at 50; that is about 68 µs a call plus 5 µs a request. At 50 connections a call carries about 10 requests (0.10 EVALSHA a request in the table above). Windows above 10,000 (the bench's per_hour is 10^9) are 120 slices with their sum (engines/cluster/windows.lua), as in embedded mode, instead of a sorted set that grew by every admission: with all 120 slices filled, as after an hour of load, a call costs what it does with an empty window (12.5 µs a request at 10 a call, `FULL_WINDOW=1`). Tried and not kept: at most one call in flight, so that requests gather into larger calls under load (calls grew only from 10 to 11.6 requests and requests/s did not change); msgpack instead of JSON for the call's argument (Redis decodes a call of 10 in 2.5 µs less, ~0.25 µs a request, not worth a dependency).",
  "PostgreSQL: nothing on the request path waits on it (the audit row's write-ahead is a journal line, prisma/repos/audit-journal.ts). Its work is the audit batch, ~250 rows an INSERT. Its backend's CPU is ~7 µs a row, as a VALUES list of row × column parameters and as the INSERT of one array a column (`unnest`) alike, most of it in the table and its four indexes (in a sequential microbenchmark of 6.5 µs a row: the roll-up trigger 0.8, each secondary index 0.4 to 0.8, the heap, primary key and WAL the other 3.5). The unnest form is kept: one statement text prepared once whatever the row count, and ~2.5 µs a row less of the replica's time to build the parameters (12.5 against 10 µs a row wall, sequential, one connection). The journal's batches used to go with ON CONFLICT DO NOTHING (a replayed journal, or a retry of a batch that did commit, must skip the rows already there): its speculative insertion cost ~9 µs of PostgreSQL's CPU a row against ~7.5 for the plain insert (250-row batches, one backend), so a batch now goes plain and again with ON CONFLICT only when it hits a row already there (prisma/repos/postgres.ts). COPY cost 6.25 µs a row but needs another dependency (pg-copy-streams) for ~1 µs a row, so it was not taken. PostgreSQL's CPU a request in the bench, backends and background processes: 13 µs before these two changes, 10-12 after (bench/dev/scale-profile.ts splits it by process: the backends are all of it but ~0.3 µs of the WAL writer). With the audit batches not written at all (a temporary switch, not kept), this replica served ~18% more requests/s (12,300 against 10,400): the audit log in PostgreSQL is now as large a share of the shared services' work as Redis.",
].join("\n\n");


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
    // Redis and PostgreSQL on core 0, with the load generator and the stand-in, not on the replica's
    // core: in a deployment they run on machines of their own, and on the replica's core their
    // wake-ups and the context switches each write to them causes cost the replica CPU (92 against
    // 87 µs a request in one bench/dev/scale-profile.ts run each way, PIN_SERVICES).
    // BENCH_SCALE_PIN_SERVICES=0 leaves them to the scheduler, as rounds before 2026-11-29 06:30 did.
    const pinned = process.env.BENCH_SCALE_PIN_SERVICES !== "0" && pinTree(pg.pid(), 0) && pinTree(redis.pid(), 0);
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
    // the ratio at 50 connections again, in alternating pairs: one pair moves with whatever else
    // the machine did during it; the median of several does not
    const pairs = Number(process.env.BENCH_SCALE_PAIRS ?? 5);
    const lite = () => load(chat(sqlite.url), auth(keySqlite), 50, seconds);
    const sharedRun = () => load(chat(r1.url), auth(keyShared), 50, seconds);
    const pids = { sqlite: sqlite.proc.pid, replica: r1.proc.pid, redis: redis.pid(), postgres: pg.pid() };
    const more = await alternatingPairs(pairs - 1, seconds, lite, sharedRun, pids);
    const ratios = [res["1 replica, PostgreSQL + Redis"][50].rps / res["1 replica, SQLite"][50].rps, ...more.ratios];
    const cpu = more.cpu;
    // the same pairs with PostgreSQL and Redis left to the scheduler (the replica's core too), as
    // rounds before 2026-11-29 06:30 measured: what sharing the replica's core costs
    const all = `0-${os.cpus().length - 1}`;
    const floating = pinned && pairs > 1 && pinTree(pg.pid(), all) && pinTree(redis.pid(), all) ? await alternatingPairs(pairs, seconds, lite, sharedRun, pids) : undefined;
    const median = medianOf(ratios);
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
      `Load: autocannon, ${seconds} s per cell, one run, non-streaming chat completions with a key carrying rate, budget and token limits (each request checks and reserves them: in memory with SQLite; with PostgreSQL + Redis in one Redis script call for the requests of an event-loop turn). PostgreSQL 15 and Redis 7 run as throwaway local servers. Pinning on this 2-core machine: the SQLite replica and replica 1 on core 1, replica 2 on core 0 (with autocannon and the upstream), so the 2-replica figure shows the cost of coordination more than a gain from a second machine; ${pinned ? "PostgreSQL and Redis on core 0 too, as on machines of their own: on the replica's core, their wake-ups cost the replica CPU (BENCH_SCALE_PIN_SERVICES=0 leaves them to the scheduler, as rounds before 2026-11-29 06:30 did; the report gives the ratio both ways)" : "PostgreSQL and Redis left to the scheduler"}.`,
      "",
      `Machine load average (1 min) before the runs ${loadBefore.toFixed(1)}, after ${loadAfter.toFixed(1)} on ${os.cpus().length} cores: well above ~2 means other work shared the cores and every figure here is low (compare "direct", the stand-in called without svc).`,
      "",
      table(["connections", "setup", "requests/s", "p50", "p99", "added p50", "added p99", "errors+non-2xx"], rows),
      "",
      `2 replicas / 1 replica (PostgreSQL + Redis) requests/s at 50 connections: ${(res["2 replicas, PostgreSQL + Redis"][50].rps / res["1 replica, PostgreSQL + Redis"][50].rps).toFixed(2)}; PostgreSQL + Redis / SQLite at 50: ${ratios[0].toFixed(2)} in the table's run${ratios.length > 1 ? `; in ${ratios.length} alternating pairs (the table's first) ${ratios.map((x) => x.toFixed(2)).join(", ")}, median **${median.toFixed(3)}**` : ""}.${cpu.replica.length ? ` CPU a request in those pairs after the first (median; user + system time from /proc over requests served): ${cpuLine(cpu)}.` : ""}${floating ? ` Then ${floating.ratios.length} more pairs with PostgreSQL and Redis left to the scheduler, free to run on the replica's core: ${floating.ratios.map((x) => x.toFixed(2)).join(", ")}, median ${medianOf(floating.ratios).toFixed(3)}; CPU a request ${cpuLine(floating.cpu)}.` : ""}`,
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
    return { title, body, data: { results: res, ratios, medianRatio: median, cpuPerRequest: cpu, servicesPinned: pinned, floating, shared: opsPart?.data, tasks, memory } };
  } finally {
    for (const p of procs) p.kill("SIGTERM");
    await sleep(1500);
    for (const s of services) await s.stop().catch(() => undefined);
    rmSync(tmp, { recursive: true, force: true });
  }
}
