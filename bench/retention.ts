// Audit retention under load (issue 26 item 7): on each store, ROWS audit entries past
// retentionDays, written in time order over 20 old days as svc writes them (on PostgreSQL each in
// its day's partition), then one steady load of chat completions in windows that take turns:
// without pruning, with it, with it, without (ABBA, twice), so the machine's drift over the run
// falls on both sides alike. In a window with pruning a Retention prunes the next slice of old
// days (as svc's own does, its cutoff moved on a quarter of the old days each time) and is closed
// when the window ends. Latency percentiles of each side over all its responses, how long pruning
// was at work, and a check that the roll-up (UsageDaily) holds every pruned entry's totals. svc
// runs in this process; autocannon runs pinned to core 0.
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { ChildProcess } from "node:child_process";
import { startSvc, jsonLogger, type RunningSvc } from "../boot/start";
import { Retention } from "../engines/store/retention";
import type { AuditRow } from "../prisma/repos/types";
import { missingServices, startPostgres, type Service } from "../test/helpers/services";
import { loadRun, sleep, startStandin, standinProvider } from "./processes";
import { table, ms, sortedPercentile, type Section } from "./report";

const DAY = 86_400_000;
const ADMIN = "sk-svc-benchadminkey0000000000000000000000000000";
const BODY = JSON.stringify({ model: "bench-model", messages: [{ role: "user", content: "Say hello." }], max_tokens: 16 });
/** The old entries span days OLDEST-20 .. OLDEST ago; each window with pruning takes a quarter. */
const OLDEST = 120;
const SLICES = 4;
/** without, with, with, without, twice */
const PATTERN = [false, true, true, false, false, true, true, false];

interface Side { rps: number; p50: number; p99: number; p999: number; max: number; errors: number; seconds: number }
interface Run { rps: number; errors: number; non2xx: number; samples: number[] }
interface StoreResult { store: string; rows: number; rate: number; without: Side; with: Side; pruned: number; pruneMs: number; activeMs: number; windowMs: number; rollupOk: boolean; rollup: { requests: number; costMicros: number } }

/** Entry `i` of `rows` old ones, in time order over the 20 days from OLDEST days ago (audit ids
 * sort by time and entries are written as they happen, so the store holds them in that order);
 * a few keys and models, a tenth failed. */
function oldRow(i: number, rows: number, now: number): AuditRow {
  const at = now - OLDEST * DAY + Math.floor((i * 20 * DAY) / rows);
  const ok = i % 10 !== 0;
  const key = `key_old${i % 5}`;
  return [`old_${String(i).padStart(9, "0")}`, new Date(at).toISOString().replace("Z", "+00:00"), key, key, "org-old", `req_${i}`, "chat.completions", `model-${i % 3}`,
    "standin", ok ? "success" : "upstream_error", ok ? null : "upstream_error", 5 + (i % 40), ok ? 12 : 0, ok ? 8 : 0, ok ? 20 : 0, ok ? 30 : 0, "{}", "127.0.0.1", null, null];
}

/** Runs of one side taken together: their mean requests/s and the percentiles of all their responses. */
function side(runs: Run[], seconds: number): Side {
  const all = Float64Array.from(runs.flatMap((r) => r.samples)).sort();
  return {
    rps: runs.reduce((n, r) => n + r.rps, 0) / runs.length,
    p50: sortedPercentile(all, 50),
    p99: sortedPercentile(all, 99),
    p999: sortedPercentile(all, 99.9),
    max: all.length ? all[all.length - 1] : 0,
    errors: runs.reduce((n, r) => n + r.errors + r.non2xx, 0),
    seconds: runs.length * seconds,
  };
}

async function onStore(store: string, env: Record<string, string>, rows: number, upstream: string, seconds: number): Promise<StoreResult> {
  const saved: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(env)) {
    saved[k] = process.env[k];
    process.env[k] = v;
  }
  const home = mkdtempSync(path.join(os.tmpdir(), "svc-bench-retention-"));
  const cfg = path.join(home, "config");
  mkdirSync(cfg);
  writeFileSync(path.join(cfg, "gateway.yaml"), standinProvider(upstream));
  let s: RunningSvc | undefined;
  try {
    s = await startSvc({ home: path.join(home, "svc"), host: "127.0.0.1", port: 0, config: [cfg], quickstart: false, resyncMs: 0, log: jsonLogger({ write: () => {} }) });
    const svc = s.svc;
    const url = `http://127.0.0.1:${s.port}`;
    const created = (await (await fetch(`${url}/v1/api-keys`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "bench", key_type: "user", organization_id: "org-bench", team_id: "team-bench", user_id: "u1", budget_limits: { daily: 1_000_000 } }),
    })).json()) as { api_key?: string };
    if (!created.api_key) throw new Error(`key creation failed: ${JSON.stringify(created)}`);
    await sleep(6000); // svc's own start-up run (5 s after start) is over: its next is 10 minutes away

    const now = Date.now();
    if (store === "PostgreSQL") {
      // entries are written into their day's partition when it is current; these old days get theirs
      for (let d = OLDEST - 21; d <= OLDEST; d++) await svc.db.prisma.$queryRawUnsafe(`SELECT auditentry_add_partition($1::date)`, new Date(now - d * DAY).toISOString().slice(0, 10));
    }
    // written in chunks made as they go (all rows held at once would make this process's heap,
    // and so the requests' garbage collection, the subject of the measurement)
    const want = { requests: 0, costMicros: 0 };
    for (let i = 0; i < rows; i += 1500) {
      const chunk: AuditRow[] = [];
      for (let j = i; j < Math.min(rows, i + 1500); j++) chunk.push(oldRow(j, rows, now));
      want.requests += chunk.length;
      for (const r of chunk) want.costMicros += Number(r[15]);
      await svc.db.repos.audit.insert(chunk);
    }

    const open = { url: `${url}/v1/chat/completions`, headers: { authorization: `Bearer ${created.api_key}` }, body: BODY, connections: 10 };
    // the warm-up runs as fast as svc answers; the windows run at half that rate, so latency shows
    // what pruning holds up rather than the queue any extra work makes on a saturated core
    const capacity = (await loadRun({ ...open, seconds: 2 })).rps as number;
    const rate = Math.max(100, Math.round(capacity / 2));
    const target = { ...open, rate, samples: true, seconds };
    await loadRun(target); // a first run at that rate, not counted: the process is still warming up

    const quiet = { warn: () => {}, info: () => {} };
    const withRuns: Run[] = [];
    const withoutRuns: Run[] = [];
    let pruned = 0;
    let activeMs = 0;
    let windowMs = 0;
    let slice = 0;
    for (const pruning of PATTERN) {
      if (!pruning) {
        withoutRuns.push(await loadRun(target));
        continue;
      }
      // svc's Retention on the store, its cutoff a quarter of the old days further on each time
      slice = Math.min(SLICES, slice + 1);
      const days = OLDEST - (20 * slice) / SLICES;
      const r = new Retention({ db: svc.db, days: () => days, ...quiet });
      const t0 = performance.now();
      let t1 = 0;
      const running = r.run().finally(() => (t1 = performance.now()));
      withRuns.push(await loadRun(target));
      const t2 = performance.now();
      await r.close();
      pruned += await running;
      activeMs += Math.min(t1 || t2, t2) - t0; // it may run out of old entries before the window ends
      windowMs += t2 - t0;
    }
    // what is left goes unloaded, so the roll-up can be checked for every entry
    const t0 = performance.now();
    pruned += await new Retention({ db: svc.db, days: () => OLDEST - 20 - 1, ...quiet }).run();
    const pruneMs = activeMs + (performance.now() - t0);

    const daily = (await svc.db.prisma.usageDaily.aggregate({ _sum: { requests: true, costMicros: true }, where: { keyId: { startsWith: "key_old" } } }))._sum;
    const rollup = { requests: Number(daily.requests ?? 0), costMicros: Number(daily.costMicros ?? 0) };
    return {
      store, rows, rate, without: side(withoutRuns, seconds), with: side(withRuns, seconds), pruned, pruneMs, activeMs, windowMs,
      rollupOk: pruned === want.requests && rollup.requests === want.requests && rollup.costMicros === want.costMicros, rollup,
    };
  } finally {
    await s?.stop().catch(() => undefined);
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    rmSync(home, { recursive: true, force: true });
  }
}

export async function retentionBench(): Promise<Section> {
  const title = "Audit retention under load";
  const seconds = Number(process.env.BENCH_SECONDS ?? 6);
  const rows = Number(process.env.BENCH_RETENTION_ROWS ?? 400_000);
  const procs: ChildProcess[] = [];
  const services: Service[] = [];
  try {
    const up = await startStandin();
    procs.push(up.proc);
    const base = { SVC_ADMIN_KEY: ADMIN, BENCH_UPSTREAM_KEY: "sk-upstream-bench", SVC_DATABASE_URL: "", SVC_REDIS_URL: "" };
    const results: StoreResult[] = [await onStore("SQLite", base, rows, up.url, seconds)];
    let skipped: string | null = null;
    try {
      skipped = missingServices();
    } catch (e) {
      skipped = String((e as Error).message);
    }
    if (!skipped && process.env.BENCH_RETENTION_STORES !== "sqlite") {
      const pg = await startPostgres();
      services.push(pg);
      results.push(await onStore("PostgreSQL", { ...base, SVC_DATABASE_URL: pg.url }, rows, up.url, seconds));
    }
    const out: (string | number)[][] = [];
    for (const r of results) {
      for (const [name, p] of [["without pruning", r.without], ["while pruning", r.with]] as const) {
        out.push([r.store, name, r.rate, p.seconds, Math.round(p.rps), ms(p.p50), ms(p.p99), ms(p.p999), ms(p.max), p.errors]);
      }
    }
    const body = [
      `${rows.toLocaleString("en-US")} audit entries 100-120 days old (past the default retentionDays of 90) on each store, written in time order as svc writes them; on PostgreSQL each old day has its partition, as entries written on their day do. One load (autocannon, 10 connections, non-streaming chat completions through a key with a budget, svc in the bench process) at half the rate svc answered in a warm-up run as fast as it could, so latency shows what pruning holds up rather than the queue any extra work makes on a saturated core; after one uncounted run at that rate, ${PATTERN.length} windows of ${seconds} s take turns without and with pruning (${PATTERN.map((p) => (p ? "with" : "without")).join(", ")}), so drift over the run falls on both sides. In each window with pruning, svc's \`Retention\` prunes the next quarter of the old days and is closed when the window ends. Each row's percentiles are over all responses of its windows.`,
      "",
      table(["store", "windows", "offered requests/s", "seconds", "requests/s", "p50", "p99", "p99.9", "max", "errors+non-2xx"], out),
      "",
      ...results.map((r) => `${r.store}: pruning was at work ${ms(r.activeMs)} of the windows' ${ms(r.windowMs)}; ${r.pruned.toLocaleString("en-US")} entries pruned in ${ms(r.pruneMs)} of work in all (what the windows left, unloaded, after them); the roll-up (UsageDaily) holds ${r.rollup.requests.toLocaleString("en-US")} requests and ${r.rollup.costMicros.toLocaleString("en-US")} cost micro-units for them: ${r.rollupOk ? "equal to the pruned entries' totals" : "NOT equal to the pruned entries' totals"}.`),
      ...(skipped ? ["", `PostgreSQL skipped: ${skipped}.`] : []),
    ].join("\n");
    return { title, body, data: { rows, seconds, pattern: PATTERN, results, skipped } };
  } finally {
    for (const p of procs) p.kill("SIGTERM");
    for (const sv of services) await sv.stop().catch(() => undefined);
  }
}
