// Usage report benchmark: 100,000 audit rows (50 keys in 5 teams, 30 days, 4 models, some
// refusals and errors, half with workflow/user metadata) written straight to the store, then
// GET /v1/usage timed over HTTP for several groupings, and the SQL alone for the case
// (group by day and key: target under 100 ms). Reported, not asserted. The same run measures what
// the roll-up (UsageRollup, kept by triggers) buys and costs: the day,key report from the roll-up
// and from the audit rows (as before it), alternated; and 1,000-row audit inserts into two copies
// of the audit table, with and without the roll-up's triggers.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { startSvc, jsonLogger } from "../boot/start";
import { auditRow } from "../engines/gateway/audit/rows";
import type Database from "better-sqlite3";
import { usageDbOf, usageReport, type UsageGroup } from "../engines/gateway/usage-report";
import { table, ms, percentile, type Section } from "./report";

const ROWS = Number(process.env.BENCH_USAGE_ROWS ?? 100_000);
const RUNS = Number(process.env.BENCH_USAGE_RUNS ?? 15);
const STATUSES = ["success", "success", "success", "success", "success", "success", "success", "success", "rate_limit_exceeded", "upstream_error"];

export async function usageBench(): Promise<Section> {
  const home = mkdtempSync(path.join(os.tmpdir(), "svc-bench-usage-"));
  const s = await startSvc({ home, host: "127.0.0.1", port: 0, quickstart: false, resyncMs: 0, log: jsonLogger({ write: () => {} }) });
  try {
    const sync = s.svc.db.repos.audit.sync;
    if (!sync) throw new Error("the usage bench needs the SQLite store");
    const now = Date.now();
    const t0 = performance.now();
    for (let i = 0; i < ROWS; i += 1000) {
      const batch = [];
      for (let j = i; j < Math.min(ROWS, i + 1000); j++) {
        const key = j % 50;
        const status = STATUSES[j % STATUSES.length];
        batch.push(
          auditRow(
            {
              timestamp: new Date(now - (j % 30) * 86_400_000 - (j % 86_400) * 1000),
              apiKeyId: `key_bench${String(key).padStart(15, "0")}`,
              apiKeyName: `bench ${key}`,
              organizationId: `org-${key % 3}`,
              requestId: `req-${j}`,
              action: "chat.completions",
              model: `model-${j % 4}`,
              provider: "bench",
              status,
              latencyMs: 5 + (j % 200),
              promptTokens: status === "success" ? 20 : 0,
              completionTokens: status === "success" ? 30 : 0,
              costMicros: status === "success" ? 70n : 0n,
              metadata: j % 2 ? { workflow_id: `wf-${j % 20}`, user_id: `user-${j % 100}` } : {},
            },
            `aud_bench_${String(j).padStart(9, "0")}`,
            new Date(now - (j % 30) * 86_400_000 - (j % 86_400) * 1000),
          ),
        );
      }
      sync.insert(batch);
    }
    const fill = performance.now() - t0;
    const admin = readFileSync(path.join(home, "admin.key"), "utf8").trim();
    const url = `http://127.0.0.1:${s.port}`;
    const cases: Array<[string, string]> = [
      ["day,key", "group_by=day,key"],
      ["key", "group_by=key"],
      ["model", "group_by=model"],
      ["hour (last 7 days)", `group_by=hour&from=${new Date(now - 7 * 86_400_000).toISOString()}`],
      ["metadata.workflow_id", "group_by=metadata.workflow_id"],
      ["one key by day", `group_by=day&key_id=key_bench${"0".padStart(15, "0")}`],
    ];
    const rows: (string | number)[][] = [];
    const data: Record<string, unknown> = { rows: ROWS, fillMs: fill };
    for (const [name, q] of cases) {
      const times: number[] = [];
      let groups = 0;
      for (let r = 0; r < RUNS; r++) {
        const t = performance.now();
        const res = await fetch(`${url}/v1/usage?${q}`, { headers: { authorization: `Bearer ${admin}` } });
        const j = (await res.json()) as { data: unknown[] };
        times.push(performance.now() - t);
        if (!res.ok) throw new Error(`GET /v1/usage?${q}: HTTP ${res.status}`);
        groups = j.data.length;
      }
      rows.push([name, groups, ms(percentile(times, 50)), ms(percentile(times, 95))]);
      data[name] = { groups, p50: percentile(times, 50), p95: percentile(times, 95) };
    }
    // the SQL alone (no HTTP, no audit flush) for the case
    const sqlTimes: number[] = [];
    for (let r = 0; r < RUNS; r++) {
      const t = performance.now();
      await usageReport(usageDbOf(s.svc.db), { groupBy: ["day", "key"] as UsageGroup[] });
      sqlTimes.push(performance.now() - t);
    }
    data.sqlDayKey = { p50: percentile(sqlTimes, 50), p95: percentile(sqlTimes, 95) };
    rows.push(["day,key (SQL only)", "", ms(percentile(sqlTimes, 50)), ms(percentile(sqlTimes, 95))]);
    const verdict = percentile(sqlTimes, 50) < 100 ? "under" : "OVER";
    const ru = await rollupTradeOff(s);
    data.rollup = ru;
    rows.push(["day,key from the roll-up", "", ms(ru.rollup.p50), ms(ru.rollup.p95)]);
    rows.push(["day,key from the audit rows", "", ms(ru.audit.p50), ms(ru.audit.p95)]);
    return {
      title: "Usage report (GET /v1/usage)",
      body:
        `${ROWS.toLocaleString("en-US")} audit rows written in ${ms(fill)}; each grouping run ${RUNS} times over HTTP with the administrative key. ` +
        `Grouping by day and key in SQL alone: p50 ${ms(percentile(sqlTimes, 50))}, ${verdict} the 100 ms target.\n\n` +
        table(["group_by", "groups", "p50", "p95"], rows) +
        `\n\nThe roll-up (${ru.rollupRows.toLocaleString("en-US")} rows for these ${ROWS.toLocaleString("en-US")} entries) answers day,key in ${ms(ru.rollup.p50)} (p50) against ${ms(ru.audit.p50)} from the audit rows; ` +
        `its triggers make inserting 1,000 audit rows (into 50,000-100,000) cost p50 ${ms(ru.insertRolled.p50)} against ${ms(ru.insertPlain.p50)} without them ` +
        `(+${((ru.insertRolled.p50 / ru.insertPlain.p50 - 1) * 100).toFixed(0)}% on the bare insert statement; the fill above went through the audit repository, triggers included, at ${(fill * 1000 / ROWS).toFixed(1)} µs a row).`,
      data,
    };
  } finally {
    await s.stop();
    rmSync(home, { recursive: true, force: true });
  }
}

/** The roll-up's gain on the report and its cost on audit inserts, measured alternately in one
 * process so the machine's load hits both sides alike. */
async function rollupTradeOff(s: Awaited<ReturnType<typeof startSvc>>) {
  const db = s.svc.db.sqlite as Database.Database;
  const q = { groupBy: ["day", "key"] as UsageGroup[] };
  const rollup: number[] = [];
  const audit: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    for (const [source, out] of r % 2 ? ([["rollup", rollup], ["audit", audit]] as const) : ([["audit", audit], ["rollup", rollup]] as const)) {
      const t = performance.now();
      await usageReport(usageDbOf(s.svc.db), q, source);
      out.push(performance.now() - t);
    }
  }
  // two empty copies of the audit table with its indexes, one also with the roll-up triggers
  // (writing into a copy of the roll-up table)
  const ddl = db.prepare(`SELECT type, sql FROM sqlite_master WHERE tbl_name IN ('AuditEntry', 'UsageRollup') AND sql IS NOT NULL`).all() as Array<{ type: string; sql: string }>;
  const copy = (name: string, triggers: boolean) => {
    for (const d of ddl) {
      if (d.type === "trigger" && !triggers) continue;
      if (!triggers && /"UsageRollup"/.test(d.sql)) continue;
      db.exec(d.sql.replace(/"AuditEntry/g, `"${name}`).replace(/"UsageRollup/g, `"${name}Rollup`));
    }
  };
  copy("BenchPlain", false);
  copy("BenchRolled", true);
  const insertPlain: number[] = [];
  const insertRolled: number[] = [];
  const ids = (db.prepare(`SELECT id FROM "AuditEntry" ORDER BY id`).raw().all() as string[][]).map((r) => r[0]);
  for (let i = 0; i + 1000 <= ids.length; i += 1000) {
    const pairs = [["BenchPlain", insertPlain], ["BenchRolled", insertRolled]] as const;
    for (const [tbl, out] of (i / 1000) % 2 ? pairs : ([pairs[1], pairs[0]] as const)) {
      const st = db.prepare(`INSERT INTO "${tbl}" SELECT * FROM "AuditEntry" WHERE id >= ? AND id <= ?`);
      const t = performance.now();
      db.transaction(() => st.run(ids[i], ids[i + 999]))();
      if (i >= ids.length / 2) out.push(performance.now() - t);
    }
  }
  const rollupRows = (db.prepare(`SELECT COUNT(*) AS n FROM "UsageRollup"`).get() as { n: number }).n;
  db.exec(`DROP TABLE "BenchPlain"; DROP TABLE "BenchRolled"; DROP TABLE "BenchRolledRollup"`);
  const p = (xs: number[]) => ({ p50: percentile(xs, 50), p95: percentile(xs, 95) });
  return { rollupRows, rollup: p(rollup), audit: p(audit), insertPlain: p(insertPlain), insertRolled: p(insertRolled) };
}
