// Audit retention under load (issue 26 item 7): on each store, ROWS audit entries past
// retentionDays (spread over 20 old days; on PostgreSQL each in its day's partition, as entries
// written on their day are), then the same load of chat completions three times: before
// pruning, while Retention.run() prunes them, and after. Latency percentiles and the maximum of
// each phase, the pruning's duration, and a check that the roll-up (UsageDaily) holds every
// pruned entry's totals. svc runs in this process; autocannon runs pinned to core 0.
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { ChildProcess } from "node:child_process";
import { startSvc, jsonLogger, type RunningSvc } from "../boot/start";
import { clusterOf } from "../engines/cluster";
import type { AuditRow } from "../prisma/repos/types";
import { missingServices, startPostgres, type Service } from "../test/helpers/services";
import { loadRun, sleep, startStandin, standinProvider } from "./processes";
import { table, ms, sortedPercentile, type Section } from "./report";

const DAY = 86_400_000;
const ADMIN = "sk-svc-benchadminkey0000000000000000000000000000";
const BODY = JSON.stringify({ model: "bench-model", messages: [{ role: "user", content: "Say hello." }], max_tokens: 16 });

interface Phase { rps: number; p50: number; p99: number; p999: number; max: number; errors: number; seconds: number }
interface Run { rps: number; errors: number; non2xx: number; samples: number[] }
interface StoreResult { store: string; rows: number; rate: number; before: Phase; during: Phase; after: Phase; pruned: number; pruneMs: number; rollupOk: boolean; rollup: { requests: number; costMicros: number } }

/** Entry `i` of the old ones: 20 UTC days 100-119 days ago, a few keys and models, a tenth failed. */
function oldRow(i: number, now: number): AuditRow {
  const at = now - (100 + (i % 20)) * DAY - (i % 3600) * 1000;
  const ok = i % 10 !== 0;
  const key = `key_old${i % 5}`;
  return [`old_${String(i).padStart(9, "0")}`, new Date(at).toISOString().replace("Z", "+00:00"), key, key, "org-old", `req_${i}`, "chat.completions", `model-${i % 3}`,
    "standin", ok ? "success" : "upstream_error", ok ? null : "upstream_error", 5 + (i % 40), ok ? 12 : 0, ok ? 8 : 0, ok ? 20 : 0, ok ? 30 : 0, "{}", "127.0.0.1", null];
}

/** Runs of one phase taken together: their mean requests/s and the percentiles of all their
 * responses (not the worst run's percentiles: a phase of more runs would look worse for that alone). */
function phase(runs: Run[], seconds: number): Phase {
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
    const url = `http://127.0.0.1:${s.port}`;
    const created = (await (await fetch(`${url}/v1/api-keys`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "bench", key_type: "user", organization_id: "org-bench", team_id: "team-bench", user_id: "u1", budget_limits: { daily: 1_000_000 } }),
    })).json()) as { api_key?: string };
    if (!created.api_key) throw new Error(`key creation failed: ${JSON.stringify(created)}`);
    const retention = clusterOf.get(s.svc)!.retention;
    await sleep(6000); // the start-up run (5 s after start) is over: the next is 10 minutes away

    const now = Date.now();
    if (store === "PostgreSQL") {
      // entries are written into their day's partition when it is current; these old days get theirs
      for (let d = 100; d < 121; d++) await s.svc.db.prisma.$queryRawUnsafe(`SELECT auditentry_add_partition($1::date)`, new Date(now - d * DAY).toISOString().slice(0, 10));
    }
    // written in chunks made as they go (200,000 rows held at once would make this process's
    // heap, and so the requests' garbage collection, the subject of the measurement)
    const want = { requests: 0, costMicros: 0 };
    for (let i = 0; i < rows; i += 1500) {
      const chunk: AuditRow[] = [];
      for (let j = i; j < Math.min(rows, i + 1500); j++) chunk.push(oldRow(j, now));
      want.requests += chunk.length;
      for (const r of chunk) want.costMicros += Number(r[15]);
      await s.svc.db.repos.audit.insert(chunk);
    }

    const open = { url: `${url}/v1/chat/completions`, headers: { authorization: `Bearer ${created.api_key}` }, body: BODY, connections: 10 };
    // the warm-up runs as fast as svc answers; the phases run at half that rate, so latency shows
    // what pruning holds up rather than the queue any extra work makes on a saturated core
    const capacity = (await loadRun({ ...open, seconds: 2 })).rps as number;
    const rate = Math.max(100, Math.round(capacity / 2));
    const target = { ...open, rate, samples: true };
    const before = phase([await loadRun({ ...target, seconds })], seconds);
    // pruning starts a second into the load and runs in this process, beside the requests; the
    // load goes on, `seconds` at a time, until pruning is over
    let pruning = true;
    const chunks: Run[] = [];
    const during = (async () => {
      while (pruning) chunks.push(await loadRun({ ...target, seconds }));
    })();
    await sleep(1000);
    const t0 = performance.now();
    const pruned = await retention.run().finally(() => (pruning = false));
    const pruneMs = performance.now() - t0;
    await during;
    const duringR = phase(chunks, seconds);
    // as long a load as while pruning, so the two maxima come from as many requests
    const afterRuns: Run[] = [];
    for (let i = 0; i < chunks.length; i++) afterRuns.push(await loadRun({ ...target, seconds }));
    const after = phase(afterRuns, seconds);

    const daily = (await s.svc.db.prisma.usageDaily.aggregate({ _sum: { requests: true, costMicros: true }, where: { keyId: { startsWith: "key_old" } } }))._sum;
    const rollup = { requests: Number(daily.requests ?? 0), costMicros: Number(daily.costMicros ?? 0) };
    return { store, rows, rate, before, during: duringR, after, pruned, pruneMs, rollupOk: rollup.requests === want.requests && rollup.costMicros === want.costMicros, rollup };
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
  const seconds = Number(process.env.BENCH_SECONDS ?? 8);
  const rows = Number(process.env.BENCH_RETENTION_ROWS ?? 200_000);
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
    if (!skipped) {
      const pg = await startPostgres();
      services.push(pg);
      results.push(await onStore("PostgreSQL", { ...base, SVC_DATABASE_URL: pg.url }, rows, up.url, seconds));
    }
    const out: (string | number)[][] = [];
    for (const r of results) {
      for (const [name, p] of [["before pruning", r.before], ["while pruning", r.during], ["after, as long", r.after]] as const) {
        out.push([r.store, name, r.rate, p.seconds, Math.round(p.rps), ms(p.p50), ms(p.p99), ms(p.p999), ms(p.max), p.errors]);
      }
    }
    const body = [
      `${rows.toLocaleString("en-US")} audit entries 100-119 days old (past the default retentionDays of 90) on each store; on PostgreSQL each old day has its partition, as entries written on their day do. The same load in three phases (autocannon, 10 connections, runs of ${seconds} s, non-streaming chat completions through a key with a budget, svc in the bench process), at half the rate svc answered in a warm-up run as fast as it could: a load that leaves room, as a server's does, so latency shows what pruning holds up rather than the queue that any extra work makes on a saturated core. Before pruning (one run); while \`Retention.run()\` prunes them (started a second into the load, in the same process as the requests; runs follow each other until pruning is over); after, for as many runs as while pruning, so both maxima come from as many requests. Each row's percentiles are over all responses of its runs.`,
      "",
      table(["store", "phase", "offered requests/s", "seconds", "requests/s", "p50", "p99", "p99.9", "max", "errors+non-2xx"], out),
      "",
      ...results.map((r) => `${r.store}: pruned ${r.pruned.toLocaleString("en-US")} entries in ${ms(r.pruneMs)}; the roll-up (UsageDaily) holds ${r.rollup.requests.toLocaleString("en-US")} requests and ${r.rollup.costMicros.toLocaleString("en-US")} cost micro-units for them: ${r.rollupOk ? "equal to the pruned entries' totals" : "NOT equal to the pruned entries' totals"}.`),
      ...(skipped ? ["", `PostgreSQL skipped: ${skipped}.`] : []),
    ].join("\n");
    return { title, body, data: { rows, seconds, results, skipped } };
  } finally {
    for (const p of procs) p.kill("SIGTERM");
    for (const sv of services) await sv.stop().catch(() => undefined);
  }
}
