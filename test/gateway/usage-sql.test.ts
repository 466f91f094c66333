// The usage report's SQL on both stores: the SQLite file and a throwaway PostgreSQL 15 (skipped
// when PostgreSQL is not installed, a failure in CI: SVC_REQUIRE_SERVICES=1), on the same rows.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { openStore, type StoreDb } from "../../engines/store/open";
import { auditRow } from "../../engines/gateway/audit/rows";
import { usageDbOf, usageReport, usageSql, type UsageQuery } from "../../engines/gateway/usage-report";
import { missingServices, startPostgres, type Service } from "../helpers/services";
import { tempDir } from "../helpers/svc";

const missing = missingServices();
const T0 = Date.UTC(2026, 10, 22, 10, 0, 0);

/** 20 rows: key_a (team red) 12, key_b (team blue) 8; latencies 1..20 ms; two refusals, one error. */
function rows() {
  return Array.from({ length: 20 }, (_, i) => {
    const ts = new Date(T0 + i * 3600_000 * 2); // two hours apart: spans two days
    const a = i < 12;
    const status = i === 3 ? "rate_limit_exceeded" : i === 4 ? "budget_exceeded" : i === 5 ? "upstream_error" : "success";
    return auditRow(
      {
        timestamp: ts, apiKeyId: a ? "key_a" : "key_b", apiKeyName: a ? "Key A" : "Key B", organizationId: "org1", requestId: `r${i}`,
        action: i === 19 ? "keys.list" : "chat.completions", model: i % 2 ? "m1" : "m2", provider: "p", status, latencyMs: i + 1,
        promptTokens: 10, completionTokens: 5, costMicros: 1000n, metadata: i % 3 === 0 ? { workflow_id: "wf", user_id: `u${i % 2}` } : {},
      },
      `aud_${String(i).padStart(4, "0")}`,
      ts,
    );
  });
}

const stores = [
  { name: "SQLite", skip: false, env: async () => ({}) as Record<string, string>, stop: async () => {} },
  { name: "PostgreSQL", skip: !!missing, pg: undefined as Service | undefined, async env() { this.pg = await startPostgres(); return { SVC_DATABASE_URL: this.pg.url }; }, async stop() { await this.pg?.stop(); } },
];

describe.each(stores)("usage report on $name", (s) => {
  let db: StoreDb;
  beforeAll(async () => {
    if (s.skip) return;
    db = await openStore(await tempDir("svc-usage-"), { env: await s.env(), backgroundCheckpoints: false });
    await db.repos.audit.insert(rows());
  }, 60_000);
  afterAll(async () => {
    await db?.close();
    await s.stop();
  });
  const report = (q: Partial<UsageQuery>) => usageReport(usageDbOf(db), { groupBy: [], ...q });

  it.skipIf(s.skip)("totals, refusals by kind, errors and nearest-rank latency, without management calls", async () => {
    const [all] = await report({});
    // 19 usage rows (the keys.list row is management); latencies 1..19
    expect(all).toMatchObject({ requests: 19, prompt_tokens: 190, completion_tokens: 95, total_tokens: 285, errors: 1, refusals: { rate_limit_exceeded: 1, budget_exceeded: 1 } });
    expect(all.spend).toBeCloseTo(0.019, 10);
    expect(all.latency_p50_ms).toBe(10);
    expect(all.latency_p95_ms).toBe(19);
  });

  it.skipIf(s.skip)("groups by key, team, day, hour, minute and metadata", async () => {
    expect((await report({ groupBy: ["key"] })).map((r) => [r.key_id, r.key_name, r.requests])).toEqual([["key_a", "Key A", 12], ["key_b", "Key B", 7]]);
    const teams = await report({ groupBy: ["team"], teams: [["key_a", "red"]] });
    expect(teams.map((r) => [r.team_id, r.requests])).toEqual([["red", 12], [null, 7]]);
    const days = await report({ groupBy: ["day", "model"] });
    expect(days.map((r) => [r.day, r.model, r.requests])).toEqual([["2026-11-22", "m1", 3], ["2026-11-22", "m2", 4], ["2026-11-23", "m1", 6], ["2026-11-23", "m2", 6]]);
    const hours = await report({ groupBy: ["hour"], to: new Date(T0 + 3 * 3600_000) });
    expect(hours.map((r) => [r.hour, r.requests])).toEqual([["2026-11-22T10:00:00Z", 1], ["2026-11-22T12:00:00Z", 1]]);
    const minutes = await report({ groupBy: ["minute"], from: new Date(T0), to: new Date(T0 + 1) });
    expect(minutes.map((r) => r.minute)).toEqual(["2026-11-22T10:00:00Z"]);
    const wf = await report({ groupBy: ["metadata.workflow_id", "metadata.user_id"], workflowId: "wf" });
    expect(wf.map((r) => [r.workflow_id, r.user_id, r.requests])).toEqual([["wf", "u0", 4], ["wf", "u1", 3]]);
  });

  it.skipIf(s.skip)("filters by keys, organization, model, action and time", async () => {
    expect((await report({ keyIds: ["key_b"] }))[0].requests).toBe(7);
    expect(await report({ keyIds: [] })).toEqual([]);
    expect(await report({ organizationId: "org2" })).toEqual([]);
    expect((await report({ model: "m1" }))[0].requests).toBe(9);
    expect((await report({ action: "keys" }))[0].requests).toBe(1);
    expect((await report({ action: "chat" }))[0].requests).toBe(19);
    expect((await report({ from: new Date(T0 + 2 * 3600_000), to: new Date(T0 + 6 * 3600_000) }))[0].requests).toBe(2);
  });

  it.skipIf(s.skip)("the roll-up the triggers keep answers as the audit rows do, through inserts and deletes", async () => {
    const midnight = Date.UTC(2026, 10, 23);
    const queries: Array<Partial<UsageQuery>> = [
      {}, { groupBy: ["day", "key"] }, { groupBy: ["key"] }, { groupBy: ["model", "provider"] }, { groupBy: ["organization", "day"] },
      { groupBy: ["team"], teams: [["key_a", "red"]] }, { groupBy: ["day"], keyIds: ["key_b"] }, { groupBy: ["key"], action: "keys" },
      { groupBy: ["day"], from: new Date(midnight) }, { groupBy: ["key"], to: new Date(midnight), model: "m1" }, { organizationId: "org1", groupBy: ["key"] },
    ];
    const same = async () => {
      for (const q of queries) {
        const full = { groupBy: [], ...q } as UsageQuery;
        expect(usageSql(db.repos.dialect, full).sql, JSON.stringify(q)).toMatch(/usagerollup/i);
        expect(await usageReport(usageDbOf(db), full, "rollup"), JSON.stringify(q)).toEqual(await usageReport(usageDbOf(db), full, "audit"));
      }
    };
    await same();
    // more rows: no key (unauthenticated loopback), no model, long latencies in every bucket size
    await db.repos.audit.insert([150, 1234, 12_345, 42, 42].map((latencyMs, i) => {
      const ts = new Date(midnight + 5 * 3600_000 + i * 1000);
      return auditRow({ timestamp: ts, apiKeyId: null, apiKeyName: null, organizationId: null, requestId: `x${i}`, action: "chat.completions", model: i === 0 ? null : "m1", provider: i === 0 ? null : "p", status: i === 1 ? "quota_exceeded" : "success", latencyMs, promptTokens: 3, completionTokens: 4, costMicros: 7n, metadata: {} } as any, `aud_x${i}`, ts);
    }));
    await same();
    expect((await report({ groupBy: ["key"] })).find((r) => r.key_id === null)).toMatchObject({ requests: 5, key_name: null, refusals: { quota_exceeded: 1 }, latency_p95_ms: 12_000 });
    // deletes (as retention prunes) subtract, down to groups that disappear
    const sqlite = db.repos.dialect === "sqlite";
    const del = sqlite ? `DELETE FROM "AuditEntry" WHERE "id" IN ('aud_0000', 'aud_0001', 'aud_x0')` : `DELETE FROM auditentry WHERE id IN ('aud_0000', 'aud_0001', 'aud_x0')`;
    if (sqlite) db.sqlite.exec(del);
    else await (db.prisma as any).$executeRawUnsafe(del);
    await same();
    expect((await report({}))[0].requests).toBe(21);
    // aud_x0 was alone in its roll-up row (no key, no model, 150 ms): the row is gone, not left at 0
    const left = sqlite
      ? (db.sqlite.prepare(`SELECT COUNT(*) AS c FROM "UsageRollup" WHERE "n" <= 0 OR "lat" = 150`).get() as { c: number }).c
      : Number(((await (db.prisma as any).$queryRawUnsafe(`SELECT COUNT(*)::int AS c FROM usagerollup WHERE n <= 0 OR lat = 150`)) as Array<{ c: number }>)[0].c);
    expect(left).toBe(0);
  });
});
