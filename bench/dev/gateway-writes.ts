// Dev tool (not a test): what the gateway's WRITE side costs a request, part by part, on the
// objects svc builds (openDb's SQLite file and pragmas, WriteAhead, AuditLog's rows, the
// roll-up upsert, the counters save, the access line, the metrics cells). It drives N requests'
// worth in turns of CONC (admissions of one event-loop turn share a journal group commit) and
// flushes as svc's limits flush does (every FLUSH requests here, one second in svc), then prints
// CPU µs a request per part (process.cpuUsage around each), SQLite statements and transactions
// a request, and bytes a request to the reservation journal and to SQLite's WAL file.
//   node --import tsx bench/dev/gateway-writes.ts [N=5000] [CONC=50] [FLUSH=5000]
//   node --cpu-prof --cpu-prof-dir=/tmp/gw-prof --import tsx bench/dev/gateway-writes.ts   (bottom-up: bench/dev/gateway-writes-prof.ts)
import { mkdtempSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { openDb } from "../../prisma/client";
import { auditInsertSql } from "../../prisma/repos/sqlite";
import { rollUp } from "../../prisma/repos/rollup-sqlite";
import { WriteAhead, journals, type ReservationRow } from "../../engines/gateway/limits/wal";
import { auditId, auditRow } from "../../engines/gateway/audit/rows";
import type { AuditRecord } from "../../engines/gateway/key-types";
import { createLogger } from "../../api/log";
import { GatewayMetrics } from "../../engines/metrics/gateway";
import { HttpMetrics } from "../../engines/metrics/http";
import type { AuditRow } from "../../prisma/repos/types";

const N = Number(process.argv[2] ?? 5000);
const CONC = Number(process.argv[3] ?? 50);
const FLUSH = Number(process.argv[4] ?? 5000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const AUDIT_BATCH = Number(process.env.AUDIT_BATCH ?? 64); // AuditLog DIRECT_CHUNK

// Count statement runs and top-level transactions on every handle (better-sqlite3's prototypes).
const counts = { stmts: 0, tx: 0 };
{
  const probe = new Database(":memory:");
  const sp = Object.getPrototypeOf(probe.prepare("SELECT 1"));
  for (const m of ["run", "all", "get"] as const) {
    const orig = sp[m];
    sp[m] = function (this: unknown, ...a: unknown[]) {
      counts.stmts++;
      return orig.apply(this, a);
    };
  }
  const dp = Object.getPrototypeOf(probe);
  const origTx = dp.transaction;
  dp.transaction = function (this: Database.Database, fn: (...a: unknown[]) => unknown) {
    const db = this;
    const t = origTx.call(this, fn);
    const wrap = (...a: unknown[]) => {
      if (!db.inTransaction) counts.tx++;
      return t(...a);
    };
    return Object.assign(wrap, { deferred: t.deferred, immediate: t.immediate, exclusive: t.exclusive });
  };
  probe.close();
}

const parts = ["journal add", "journal commit", "journal settle", "audit row", "access line", "metrics", "audit insert", "audit roll-up", "audit commit", "flush: counters", "flush: journal fold", "flush: commit"] as const;
type Part = (typeof parts)[number];
const cpu = Object.fromEntries(parts.map((p) => [p, 0])) as Record<Part, number>;
const statPart = Object.fromEntries(parts.map((p) => [p, 0])) as Record<Part, number>;
const calls = Object.fromEntries(parts.map((p) => [p, 0])) as Record<Part, number>;
function timed<T>(p: Part, f: () => T): T {
  const s0 = counts.stmts;
  const t = process.cpuUsage();
  const r = f();
  const d = process.cpuUsage(t);
  cpu[p] += d.user + d.system;
  calls[p]++;
  statPart[p] += counts.stmts - s0;
  return r;
}

// the access line as svc writes it: stdout when it is not a terminal (run with > /dev/null)
const sink = process.stdout.isTTY ? { write: (_s: string) => undefined } : undefined;
const log = createLogger({ format: "json", ...(sink ? { destination: sink } : {}) });
const gm = new GatewayMetrics();
const hm = new HttpMetrics();

async function round(): Promise<{ walBytes: number; journalBytes: number; tx: number; stmts: number }> {
  for (const p of parts) (cpu[p] = 0), (statPart[p] = 0), (calls[p] = 0);
  const dir = mkdtempSync(path.join(os.tmpdir(), "svc-gw-writes-"));
  const file = path.join(dir, "svc.db");
  const db = await openDb(file, { backgroundCheckpoints: false, warn: () => undefined });
  const h = db.sqlite;
  h.pragma("wal_autocheckpoint = 0"); // the WAL only grows during the run: its size is what was written
  const wal = new WriteAhead(h);
  wal.start(0);
  const st = new Map<number, Database.Statement>();
  const audit: AuditRow[] = [];
  const dirty = new Map<string, [string, string, number, number, number]>();
  let journalBytes = 0;
  const walSize = () => {
    try {
      return statSync(`${file}-wal`).size;
    } catch {
      return 0;
    }
  };
  const wal0 = walSize();
  const tx0 = counts.tx;
  const s0 = counts.stmts;
  const keys = Array.from({ length: 20 }, (_, i) => `key_${i}`);
  let seq = 0;
  // AuditLog: a full batch of 64 rows (DIRECT_CHUNK) is written at once, as SqliteAudit.insert
  // does: the rows and their roll-up in one transaction of their own
  const auditWrite = (all = false) => {
    // a full batch writes whole batches (the rest waits); the limits flush drains everything
    while (audit.length >= (all ? 1 : AUDIT_BATCH)) auditChunk(audit.splice(0, AUDIT_BATCH));
  };
  const auditChunk = (rows: AuditRow[]) => {
    const t0 = process.cpuUsage();
    const before = cpu["audit insert"] + cpu["audit roll-up"];
    h.transaction(() => {
      timed("audit insert", () => {
        let s = st.get(rows.length);
        if (!s) st.set(rows.length, (s = h.prepare(auditInsertSql(rows.length))));
        s.run(rows.flat());
      });
      timed("audit roll-up", () => rollUp(h, rows));
    })();
    const d = process.cpuUsage(t0);
    cpu["audit commit"] += d.user + d.system - (cpu["audit insert"] + cpu["audit roll-up"] - before);
  };
  // the limits flush (once a second in svc): counters, the journal fold and what audit rows are
  // queued, one transaction
  const flush = () => {
    for (const j of journals(file)) journalBytes += statSync(j.file).size;
    const counters = [...dirty.values()];
    dirty.clear();
    const now = new Date().toISOString();
    const t0 = process.cpuUsage();
    const before = cpu["flush: counters"] + cpu["flush: journal fold"];
    h.transaction(() => {
      timed("flush: counters", () => {
        const c = counters;
        const sql = `INSERT INTO "UsageCounter" (keyId, period, spendMicros, tokens, requests, updatedAt) VALUES ${Array(c.length).fill("(?,?,?,?,?,?)").join(",")} ON CONFLICT(keyId, period) DO UPDATE SET spendMicros=excluded.spendMicros, tokens=excluded.tokens, requests=excluded.requests, updatedAt=excluded.updatedAt`;
        if (c.length) h.prepare(sql).run(c.flatMap((x) => [...x, now]));
      });
      timed("flush: journal fold", () => wal.fold());
      auditWrite(true);
    })();
    wal.folded();
    const d = process.cpuUsage(t0);
    cpu["flush: commit"] += d.user + d.system - (cpu["flush: counters"] + cpu["flush: journal fold"] - before);
  };
  for (let done = 0; done < N; ) {
    // each part runs over the whole turn inside one timing: a process.cpuUsage() pair costs ~2 µs
    const turn: ReservationRow[] = [];
    const recs: AuditRecord[] = [];
    for (let i = 0; i < CONC && done < N; i++, done++) {
      const id = wal.nextId();
      const k = keys[id % keys.length];
      turn.push({ id, keyId: k, entities: [k, "team_a"], day: "day:2026-11-28", month: "month:2026-11", spend: 20, promptTokens: 12, tokens: 60, at: Date.now(), requestId: `req_${id.toString(36)}abcdef`, action: "chat.completions", model: "gpt-x", keyName: `name ${k}`, organizationId: "org_a", ip: "127.0.0.1" });
    }
    timed("journal add", () => {
      for (const r of turn) void wal.add(r);
    });
    timed("journal commit", () => wal.commit());
    timed("journal settle", () => {
      for (const r of turn) wal.settle(r.id);
    });
    for (const r of turn) recs.push({ timestamp: new Date(), apiKeyId: r.keyId, apiKeyName: r.keyName ?? undefined, organizationId: "org_a", requestId: r.requestId, action: "chat.completions", model: "gpt-x", provider: "up", status: "success", latencyMs: 3, promptTokens: 12, completionTokens: 48, costMicros: 20n, metadata: undefined as unknown as Record<string, unknown>, ipAddress: "127.0.0.1", userAgent: "OpenAI/JS 5.0.0" });
    timed("audit row", () => {
      for (const e of recs) audit.push(auditRow(e, auditId(e.timestamp.getTime(), ++seq, "0a1b2c3d"), e.timestamp));
    });
    timed("access line", () => {
      for (const r of turn) log.access({ requestId: r.requestId, keyId: r.keyId, method: "POST", route: "/v1/chat/completions", status: 200, latencyMs: 3 });
    });
    timed("metrics", () => {
      for (let i = 0; i < turn.length; i++) {
        hm.count("/v1/chat/completions", 200, "openai");
        gm.completed("/v1/chat/completions", "up", "gpt-x", 12, 48, 20, 3);
      }
    });
    if (audit.length >= AUDIT_BATCH) auditWrite();
    for (const r of turn) for (const e2 of r.entities) for (const p of [r.day, r.month, "total"]) dirty.set(`${e2}|${p}`, [e2, p, 20 * seq, 60 * seq, seq]);
    if (done % FLUSH === 0 || done >= N) flush();
  }
  const out = { walBytes: walSize() - wal0, journalBytes, tx: counts.tx - tx0, stmts: counts.stmts - s0 };
  wal.close();
  await db.close();
  rmSync(dir, { recursive: true, force: true });
  return out;
}

let probeUs = 0;
{
  const t = process.cpuUsage();
  let n = 0;
  // PROF=1 leaves the probe out of a --cpu-prof run
  for (; n < (process.env.PROF ? 1 : 200_000); n++) {
    const a = process.cpuUsage();
    process.cpuUsage(a);
  }
  const d = process.cpuUsage(t);
  probeUs = (d.user + d.system) / n;
}
const results: Array<{ cpu: Record<Part, number>; st: Record<Part, number>; walBytes: number; journalBytes: number; tx: number; stmts: number }> = [];
for (let r = 0; r < ROUNDS + 1; r++) {
  const x = await round();
  // less what the two process.cpuUsage() calls around a part cost (measured on an empty part)
  for (const p of parts) cpu[p] = Math.max(0, cpu[p] - calls[p] * probeUs);
  if (r > 0) results.push({ cpu: { ...cpu }, st: { ...statPart }, ...x }); // round 0 warms up
}
await log.flush();
const med = (a: number[]) => a.sort((x, y) => x - y)[a.length >> 1];
const say = (s: string) => process.stderr.write(s + "\n");
say(`gateway write side: ${N} requests, ${CONC} admitted a turn, audit written ${AUDIT_BATCH} rows to a transaction, a limits flush every ${FLUSH}; median of ${ROUNDS} rounds; ${probeUs.toFixed(2)} µs of timing overhead a part subtracted`);
say(`| part | CPU µs a request | SQLite statements a request |`);
say(`| --- | ---: | ---: |`);
let total = 0;
for (const p of parts) {
  const us = med(results.map((r) => r.cpu[p])) / N;
  total += us;
  say(`| ${p} | ${us.toFixed(2)} | ${(med(results.map((r) => r.st[p])) / N).toFixed(4)} |`);
}
say(`| **total** | **${total.toFixed(2)}** | ${(med(results.map((r) => r.stmts)) / N).toFixed(4)} |`);
say(`transactions a request: ${(med(results.map((r) => r.tx)) / N).toFixed(4)}; journal bytes a request: ${(med(results.map((r) => r.journalBytes)) / N).toFixed(0)}; SQLite WAL bytes a request: ${(med(results.map((r) => r.walBytes)) / N).toFixed(0)}`);
