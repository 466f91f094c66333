// Usage report benchmark: 100,000 audit rows (50 keys in 5 teams, 30 days, 4 models, some
// refusals and errors, half with workflow/user metadata) written straight to the store, then
// GET /v1/usage timed over HTTP for several groupings, and the SQL alone for the case
// (group by day and key: target under 100 ms). Reported, not asserted.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { startSvc, jsonLogger } from "../boot/start";
import { auditRow } from "../engines/gateway/audit/rows";
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
    return {
      title: "Usage report (GET /v1/usage)",
      body:
        `${ROWS.toLocaleString("en-US")} audit rows written in ${ms(fill)}; each grouping run ${RUNS} times over HTTP with the administrative key. ` +
        `Grouping by day and key in SQL alone: p50 ${ms(percentile(sqlTimes, 50))}, ${verdict} the 100 ms target.\n\n` +
        table(["group_by", "groups", "p50", "p95"], rows),
      data,
    };
  } finally {
    await s.stop();
    rmSync(home, { recursive: true, force: true });
  }
}
