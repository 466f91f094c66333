// Audit retention on PostgreSQL by day partitions: with rows over several days past the cutoff,
// on the cutoff's own day (before and after it), in the default partition and recent ones, a
// retention run of two replicas at once while requests are served drops the partitions of the
// whole past days (gone from pg_inherits and pg_class), deletes the cutoff day's early rows and the
// default partition's old rows by batch, keeps the rest, puts the partitions of the coming days in
// place, adds every pruned row to UsageDaily once, leaves the usage report's roll-up equal to the
// audit rows left, and archives every pruned row first; a run whose archive cannot be written
// drops nothing; a day whose detach would wait behind a reader is left to the next run. And the
// migration that partitions the table keeps the entries already stored.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import path from "node:path";
import { readdir, readFile, writeFile } from "node:fs/promises";
import OpenAI from "openai";
import pg from "pg";
import { readFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { missingServices, startPostgres, type Service } from "../helpers/services";
import { listPgMigrations, migratePg, pgMigrationsDir } from "../../engines/store/pg-migrate";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";
import { eventually, until } from "../helpers/http";
import { runCli } from "../helpers/cli";
import { provider, standIn, type StandIn } from "../gateway/fixtures";
import { startShared, type Shared } from "./cluster";
import { clusterOf } from "../../engines/cluster";
import { Retention } from "../../engines/store/retention";
import { auditRow } from "../../engines/gateway/audit/rows";
import { usageDbOf, usageReport, type UsageRow } from "../../engines/gateway/usage-report";
import type { AuditRow } from "../../prisma/repos/types";
import type { RetentionRepo } from "../../prisma/repos/retention";

const missing = missingServices();
if (missing) console.warn(`test/scale/retention-partitions skipped: ${missing}`);

const DAY = 86_400_000;
const DAYS = 3; // retentionDays
const now = Date.now();
const dayOf = (t: number) => Math.floor(t / DAY) * DAY;
const cutoff = now - DAYS * DAY;
const cutoffDay = dayOf(cutoff);
const today = dayOf(now);
const part = (t: number) => `auditentry_p${new Date(t).toISOString().slice(0, 10).replaceAll("-", "")}`;

function row(id: string, at: number, i: number): AuditRow {
  const ok = i % 5 !== 0;
  return auditRow(
    {
      timestamp: new Date(at), apiKeyId: i % 2 ? "key_a" : undefined, apiKeyName: i % 2 ? "A" : undefined, organizationId: i % 3 ? "org" : undefined,
      requestId: `r_${id}`, action: "chat.completions", model: i % 3 ? "gpt-x" : "other", provider: "up", status: ok ? "success" : "upstream_error",
      latencyMs: (i * 37) % 2000, promptTokens: ok ? 10 + (i % 4) : 0, completionTokens: ok ? 3 : 0, costMicros: BigInt(ok ? 100 + i : 0), metadata: {},
    },
    id,
    new Date(at),
  );
}

/** Rows by where they stand: whole days 4-8 days old (partitions), the cutoff's day before and
 * after the cutoff, 20 days old (no partition: the default one), and yesterday. */
function rows() {
  const old: AuditRow[] = [];
  for (let d = 4; d <= 8; d++) for (let i = 0; i < 150; i++) old.push(row(`old_${d}_${i}`, dayOf(now - d * DAY) + i * 500_000, i));
  const span = cutoff - cutoffDay;
  const boundary = Array.from({ length: 120 }, (_, i) => row(`edge_${i}`, cutoffDay + Math.floor((span * (i + 1)) / 122), i));
  const kept = Array.from({ length: 30 }, (_, i) => row(`keep_${i}`, cutoff + 600_000 + i * 1000, i));
  const stray = Array.from({ length: 40 }, (_, i) => row(`stray_${i}`, now - 20 * DAY + i * 1000, i));
  const recent = Array.from({ length: 50 }, (_, i) => row(`new_${i}`, now - DAY + i * 1000, i));
  return { old, boundary, kept, stray, recent };
}

type Totals = Record<string, { requests: number; errors: number; promptTokens: number; completionTokens: number; costMicros: number }>;
function totals(rs: AuditRow[]): Totals {
  const m: Totals = {};
  for (const r of rs) {
    const k = `${r[2] ?? ""}|${r[7] ?? ""}|${String(r[1]).slice(0, 10)}`;
    const v = (m[k] ??= { requests: 0, errors: 0, promptTokens: 0, completionTokens: 0, costMicros: 0 });
    v.requests++;
    if (r[9] !== "success") v.errors++;
    v.promptTokens += Number(r[12]);
    v.completionTokens += Number(r[13]);
    v.costMicros += Number(r[15]);
  }
  return Object.fromEntries(Object.entries(m).sort());
}

/** The usage report per day, key and model, before today (the load's requests land today). */
type DayRow = { requests: number; errors: number; promptTokens: number; completionTokens: number; spend: number };
const byDay = (rs: UsageRow[]): Record<string, DayRow> =>
  Object.fromEntries(rs.map((r): [string, DayRow] => [`${r.key_id ?? ""}|${r.model ?? ""}|${r.day}`, { requests: r.requests, errors: r.errors, promptTokens: r.prompt_tokens, completionTokens: r.completion_tokens, spend: r.spend }]).sort());

describe.skipIf(!!missing)("audit retention on PostgreSQL by day partitions", () => {
  let shared: Shared;
  let s1: TestSvc;
  let s2: TestSvc;
  let up: StandIn;
  let c: pg.Client;
  beforeAll(async () => {
    up = await standIn();
    shared = await startShared();
    [s1, s2] = [await startTestSvc({ home: await tempDir("svc-retpart-1-"), resyncMs: 0 }), await startTestSvc({ home: await tempDir("svc-retpart-2-"), resyncMs: 0 })];
    c = new pg.Client({ connectionString: shared.pg.url });
    await c.connect();
  }, 90_000);
  afterAll(async () => {
    await c?.end();
    await s1?.stop();
    await s2?.stop();
    await shared?.stop();
    await up?.close();
  });

  const attached = async () =>
    (await c.query(`SELECT c.relname::text AS n FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'auditentry'::regclass ORDER BY 1`)).rows.map((r) => r.n as string);
  const tables = async () => (await c.query(`SELECT relname::text AS n FROM pg_class WHERE relkind = 'r' AND relname ~ '^auditentry_p' ORDER BY 1`)).rows.map((r) => r.n as string);
  const count = async (prefix: string) => Number((await c.query(`SELECT COUNT(*)::int AS n FROM auditentry WHERE id LIKE $1`, [`${prefix}%`])).rows[0].n);
  const report = (source: "rollup" | "audit") =>
    usageReport(usageDbOf(s1.svc.db), { groupBy: ["day", "key", "model"], from: new Date(today - 30 * DAY), to: new Date(today) }, source).then(byDay);

  it("drops the whole past days as partitions under load, batches the rest, keeps the roll-ups and the archive", async () => {
    const svc = s1.svc;
    await svc.store.write([
      { op: "upsert", kind: "Provider", name: "up", owner: "config:test", spec: provider("up", up, [{ name: "gpt-x", inputPerMillion: 1, outputPerMillion: 1 }]).spec },
    ]);
    // the day partitions a long-running store has (the migration and each run add them for the coming days)
    const repo = svc.db.repos.retention as RetentionRepo;
    await eventually(() => repo.addPartitions!(new Date(now - 8 * DAY), 9)); // false while a replica's own run holds the partition lock
    const { old, boundary, kept, stray, recent } = rows();
    await svc.db.repos.audit.insert([...old, ...boundary, ...kept, ...stray, ...recent]);
    // a batch replayed (the audit journal's inserts skip rows already stored, as after a crash)
    // is not stored twice: the key is (id, timestamp)
    await svc.db.repos.audit.insert([...old.slice(0, 10), ...recent.slice(0, 10)]);
    expect(await count("old_")).toBe(old.length);
    expect(await count("new_")).toBe(recent.length);
    expect((await c.query(`SELECT COUNT(*)::int AS n FROM auditentry_default WHERE id LIKE 'stray_%'`)).rows[0].n).toBe(stray.length);

    const before = await report("rollup");
    expect(before).toEqual(await report("audit"));
    const oldDays = [4, 5, 6, 7, 8].map((d) => part(dayOf(now - d * DAY)));
    expect(await attached()).toEqual(expect.arrayContaining(oldDays));

    // the archive "directory" is a file: it cannot be written, so nothing may be dropped or deleted
    await writeFile(path.join(s1.home, "blocked"), "not a directory");
    await svc.store.write([{ op: "upsert", kind: "Server", name: "main", owner: "config:test", spec: { retentionDays: DAYS, retentionArchiveDir: "blocked" } }]);
    await until(() => svc.server.retentionArchiveDir === "blocked", 10_000);
    await expect(clusterOf.get(svc)!.retention.run()).rejects.toThrow();
    expect(await attached()).toEqual(expect.arrayContaining(oldDays));
    for (const [p, n] of [["old_", old.length], ["edge_", boundary.length], ["stray_", stray.length]] as const) expect(await count(p)).toBe(n);
    expect(await report("rollup")).toEqual(before);
    expect((await c.query(`SELECT COUNT(*)::int AS n FROM usagedaily`)).rows[0].n).toBe(0);

    await svc.store.write([{ op: "upsert", kind: "Server", name: "main", owner: "config:test", spec: { retentionDays: DAYS, retentionArchiveDir: "audit-archive" } }]);
    await until(() => svc.server.retentionArchiveDir === "audit-archive", 10_000);
    const client = new OpenAI({ apiKey: "none", baseURL: `${s1.url}/v1`, maxRetries: 0 });
    const load = Promise.all(Array.from({ length: 60 }, () => client.chat.completions.create({ model: "gpt-x", messages: [{ role: "user", content: "hi" }] })));
    // both replicas at once: one takes the partition work, both prune by batch, nothing counts
    // twice (the second replica's run as its cluster builds it, with the same Server settings:
    // only the replica running the controllers applies the Server resource to itself)
    const second = new Retention({ db: s2.svc.db, days: () => DAYS, archiveDir: () => path.join(s2.home, "audit-archive"), warn: () => {}, info: () => {} });
    await Promise.all([clusterOf.get(svc)!.retention.run(), second.run()]);
    await second.close();
    expect(await load).toHaveLength(60);
    await clusterOf.get(svc)!.retention.run(); // whatever the second replica's concurrent run left to the next one

    // the past days' partitions are gone, attached or not; the cutoff's day and the coming ones stay
    const left = await tables();
    for (const p of oldDays) expect(left).not.toContain(p);
    const ahead = Array.from({ length: DAYS + 8 }, (_, i) => part(cutoffDay + i * DAY));
    expect(await attached()).toEqual(expect.arrayContaining([...ahead, "auditentry_default"]));
    for (const [p, n] of [["old_", 0], ["edge_", 0], ["stray_", 0], ["keep_", kept.length], ["new_", recent.length]] as const) expect(await count(p), p).toBe(n);

    // UsageDaily holds every pruned row once; the report's roll-up matches the rows left, and with
    // UsageDaily adds up to what it said before
    const pruned = [...old, ...boundary, ...stray];
    const daily = Object.fromEntries(
      (await c.query(`SELECT keyid, model, day, requests, errors, prompttokens, completiontokens, costmicros FROM usagedaily`)).rows
        .map((u) => [`${u.keyid}|${u.model}|${u.day}`, { requests: u.requests, errors: u.errors, promptTokens: Number(u.prompttokens), completionTokens: Number(u.completiontokens), costMicros: Number(u.costmicros) }])
        .sort(),
    );
    expect(daily).toEqual(totals(pruned));
    const after = await report("rollup");
    expect(after).toEqual(await report("audit"));
    type Sum = { requests: number; promptTokens: number; costMicros: number };
    const fromReport = (r: typeof before): Array<[string, Sum]> => Object.entries(r).map(([k, v]) => [k, { requests: v.requests, promptTokens: v.promptTokens, costMicros: Math.round(v.spend * 1e6) }]);
    const sum: Record<string, Sum> = {};
    for (const [k, v] of [...fromReport(after), ...(Object.entries(daily) as Array<[string, Sum]>)]) {
      const t = (sum[k] ??= { requests: 0, promptTokens: 0, costMicros: 0 });
      t.requests += v.requests;
      t.promptTokens += v.promptTokens;
      t.costMicros += v.costMicros;
    }
    const was = Object.fromEntries(fromReport(before));
    expect(Object.fromEntries(Object.entries(sum).sort())).toEqual(Object.fromEntries(Object.entries(was).sort()));

    // every pruned row is in the archive (each replica's own directory), once
    const archived: Array<Record<string, unknown>> = [];
    for (const h of [s1.home, s2.home]) {
      const dir = path.join(h, "audit-archive");
      const files = await readdir(dir).catch(() => [] as string[]);
      for (const f of files) archived.push(...(await readFile(path.join(dir, f), "utf8")).trim().split("\n").map((l) => JSON.parse(l)));
    }
    expect(archived.map((r) => r.id).sort()).toEqual(pruned.map((r) => String(r[0])).sort());
    const first = old[0];
    expect(archived.find((r) => r.id === first[0])).toMatchObject({ timestamp: new Date(String(first[1])).toISOString(), apiKeyId: first[2], model: first[7], costMicros: Number(first[15]) });

    // a further run finds nothing
    expect(await clusterOf.get(svc)!.retention.run()).toBe(0);

    // svc doctor reads the partitioned table: its size, how many entries, the oldest one's day
    const rowsLeft = Number((await c.query(`SELECT COUNT(*)::int AS n FROM auditentry`)).rows[0].n);
    const doc = await runCli(["doctor", "--home", s1.home, "--port", String(s1.port)], shared.env);
    const line = doc.stdout.split("\n").find((l) => /audit entries, the oldest from/.test(l));
    expect(line, doc.stdout).toContain(`${rowsLeft.toLocaleString("en-US")} audit entries, the oldest from ${new Date(cutoff + 600_000).toISOString().slice(0, 10)}`);
  }, 120_000);

  it("leaves a day to the next run when its detach would wait behind a reader, instead of queueing requests", async () => {
    const svc = s1.svc;
    const repo = svc.db.repos.retention as RetentionRepo;
    const d = dayOf(now - 6 * DAY);
    await eventually(() => repo.addPartitions!(new Date(d), 1));
    const late = Array.from({ length: 20 }, (_, i) => row(`late_${i}`, d + i * 1000, i));
    await svc.db.repos.audit.insert(late);
    const reader = new pg.Client({ connectionString: shared.pg.url });
    await reader.connect();
    try {
      await reader.query("BEGIN");
      await reader.query("SELECT COUNT(*) FROM auditentry"); // holds ACCESS SHARE on the table until COMMIT
      await clusterOf.get(svc)!.retention.run(); // settles: the detach gives up after its lock wait
      expect(await attached()).toContain(part(d));
      expect(await count("late_")).toBe(late.length);
    } finally {
      await reader.query("COMMIT").catch(() => undefined);
      await reader.end();
    }
    await clusterOf.get(svc)!.retention.run();
    expect(await tables()).not.toContain(part(d));
    expect(await count("late_")).toBe(0);
  }, 60_000);
});

describe.skipIf(!!missing)("the migration that partitions auditentry", () => {
  let db: Service;
  let c: pg.Client;
  beforeAll(async () => {
    db = await startPostgres();
    c = new pg.Client({ connectionString: db.url });
    await c.connect();
  }, 60_000);
  afterAll(async () => {
    await c?.end();
    await db?.stop();
  });

  it("moves the stored entries into day partitions, keeps the indexes, the roll-up and its triggers", async () => {
    // the store as the migrations before this one left it, with entries over 5 days and one 500 days old
    const names = listPgMigrations();
    const mine = names.indexOf("20261125200000_audit_partitions");
    expect(mine).toBeGreaterThan(0);
    await c.query(`CREATE TABLE "_prisma_migrations" (id VARCHAR(36) PRIMARY KEY, checksum VARCHAR(64) NOT NULL, finished_at TIMESTAMPTZ, migration_name VARCHAR(255) NOT NULL,
      logs TEXT, rolled_back_at TIMESTAMPTZ, started_at TIMESTAMPTZ NOT NULL DEFAULT now(), applied_steps_count INTEGER NOT NULL DEFAULT 0)`);
    for (const n of names.slice(0, mine)) {
      await c.query(readFileSync(path.join(pgMigrationsDir, n, "migration.sql"), "utf8"));
      await c.query(`INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name) VALUES ($1, '', now(), $2)`, [randomUUID(), n]);
    }
    await c.query(`INSERT INTO auditentry (id, "timestamp", apikeyid, requestid, action, model, status, latencyms, prompttokens, costmicros)
      SELECT 'a' || i, date_trunc('hour', now() AT TIME ZONE 'UTC') - (i || ' hours')::interval, 'k' || (i % 3), 'r' || i, 'chat.completions', 'm', CASE WHEN i % 5 = 0 THEN 'upstream_error' ELSE 'success' END, i % 300, 3, 10
      FROM generate_series(0, 119) i`);
    await c.query(`INSERT INTO auditentry (id, "timestamp", requestid, action, status, latencyms) VALUES ('ancient', (now() AT TIME ZONE 'UTC') - interval '500 days', 'r', 'chat.completions', 'success', 1)`);
    // the columns this migration found (a later migration adds traceid: compared apart, below)
    const entries = `SELECT json_agg(to_jsonb(a) - 'traceid' ORDER BY id)::text AS j FROM auditentry a`;
    const rollup = `SELECT json_agg(u ORDER BY day, apikeyid, organizationid, model, provider, action, st, lat)::text AS j FROM usagerollup u`;
    const [was, wasRollup] = [(await c.query(entries)).rows[0].j, (await c.query(rollup)).rows[0].j];

    expect(await migratePg(db.url)).toContain("20261125200000_audit_partitions");

    expect((await c.query(`SELECT relkind::text AS k FROM pg_class WHERE oid = 'auditentry'::regclass`)).rows[0].k).toBe("p");
    expect((await c.query(entries)).rows[0].j).toBe(was);
    expect((await c.query(`SELECT COUNT(*)::int AS n FROM auditentry WHERE traceid IS NOT NULL`)).rows[0].n).toBe(0);
    expect((await c.query(rollup)).rows[0].j).toBe(wasRollup);
    const pk = await c.query(`SELECT a.attname::text AS col FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) WHERE i.indrelid = 'auditentry'::regclass AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)`);
    expect(pk.rows.map((r) => r.col)).toEqual(["id", "timestamp"]);
    const idx = await c.query(`SELECT indexname::text AS n FROM pg_indexes WHERE tablename = 'auditentry' ORDER BY 1`);
    // (a later migration, 20261128020000, puts id in the timestamp index)
    expect(idx.rows.map((r) => r.n)).toEqual(["auditentry_apikeyid_timestamp_idx", "auditentry_organizationid_timestamp_idx", "auditentry_pkey", "auditentry_timestamp_id_idx"]);
    // each entry in its day's partition (today and the next 7 days have one ahead), the old one in the default partition
    const where = await c.query(`SELECT tableoid::regclass::text AS p, to_char("timestamp", 'YYYYMMDD') AS d FROM auditentry`);
    for (const r of where.rows) expect(r.p).toBe(r.d < (await dayPart(c, -400)) ? "auditentry_default" : `auditentry_p${r.d}`);
    expect(where.rows.filter((r) => r.p === "auditentry_default")).toHaveLength(1);
    const parts = (await c.query(`SELECT c.relname::text AS n FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'auditentry'::regclass`)).rows.map((r) => r.n);
    for (let d = 0; d <= 7; d++) expect(parts).toContain(`auditentry_p${await dayPart(c, d)}`);

    // the roll-up triggers work on the partitioned table: it answers as the entries do after an insert and a delete
    const usage = { dialect: "postgresql" as const, all: async (sql: string, params: unknown[]) => (await c.query(sql, params)).rows };
    const q = { groupBy: ["day", "key", "model"] as Array<"day" | "key" | "model"> };
    await c.query(`INSERT INTO auditentry (id, "timestamp", apikeyid, requestid, action, model, status, latencyms) VALUES ('b1', now() AT TIME ZONE 'UTC', 'k9', 'r', 'chat.completions', 'm', 'success', 1500)`);
    await c.query(`DELETE FROM auditentry WHERE id IN ('a1', 'a2', 'ancient')`);
    const viaRollup = await usageReport(usage, q, "rollup");
    expect(viaRollup.find((r) => r.key_id === "k9")?.requests).toBe(1);
    expect(viaRollup).toEqual(await usageReport(usage, q, "audit"));
  }, 60_000);
});

/** The UTC day `days` from today as YYYYMMDD (PostgreSQL's clock, as the migration reads it). */
async function dayPart(c: pg.Client, days: number): Promise<string> {
  return (await c.query(`SELECT to_char((now() AT TIME ZONE 'UTC')::date + $1::int, 'YYYYMMDD') AS d`, [days])).rows[0].d;
}
