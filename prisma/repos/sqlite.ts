// The repositories in SQLite's SQL (the embedded default store): "?" placeholders, the
// mixed-case table and column names of prisma/schema.prisma. Audit rows, counters and rate
// state are written synchronously on the direct better-sqlite3 handle (types.ts SyncAudit /
// SyncLimits; through Prisma's JS engine a row costs ~10x the CPU); resource writes go through
// the Prisma client's interactive transaction like the model reads around them.
import type Database from "better-sqlite3";
import { SqliteTasks } from "./tasks-sqlite";
import { rollUp } from "./rollup-sqlite";
import { SqliteRetention, type OffThreadPrune } from "./retention-sqlite";
import type { PrismaClient } from "../generated/client";
import { resourceRepo, type RawClient } from "./resources";
import {
  AUDIT_COLUMNS, BATCH, chunks,
  type AuditRepo, type AuditRow, type LimitsLoaded, type LimitsRepo, type LimitsSave, type Repos,
  type SyncAudit, type SyncLimits,
} from "./types";

const marks = (n: number, row: string) => Array(n).fill(row).join(",");
const AUDIT_ROW = `(${AUDIT_COLUMNS.map(() => "?").join(",")})`;

/** A multi-row audit INSERT (also what the write-ahead recovery writes, engines/gateway/limits/wal.ts). */
export const auditInsertSql = (n: number) =>
  `INSERT INTO "AuditEntry" (${AUDIT_COLUMNS.map((c) => `"${c}"`).join(",")}) VALUES ${marks(n, AUDIT_ROW)}`;

const COUNTERS = (n: number) => `INSERT INTO "UsageCounter" (keyId, period, spendMicros, tokens, requests, updatedAt) VALUES ${marks(n, "(?,?,?,?,?,?)")}
  ON CONFLICT(keyId, period) DO UPDATE SET spendMicros=excluded.spendMicros, tokens=excluded.tokens, requests=excluded.requests, updatedAt=excluded.updatedAt`;
const RATES = (n: number) => `INSERT INTO "RateState" (keyId, state, updatedAt) VALUES ${marks(n, "(?,?,?)")}
  ON CONFLICT(keyId) DO UPDATE SET state=excluded.state, updatedAt=excluded.updatedAt`;
const RATES_GONE = (n: number) => `DELETE FROM "RateState" WHERE keyId IN (${marks(n, "?")})`;

const RESOURCES = (n: number) => `INSERT INTO "Resource" (kind,name,uid,owner,labels,spec,generation,status,revision,deletedAt,createdAt,updatedAt) VALUES ${marks(n, "(?,?,?,?,?,?,?,?,?,?,?,?)")}
  ON CONFLICT(kind,name) DO UPDATE SET uid=excluded.uid, owner=excluded.owner, labels=excluded.labels, spec=excluded.spec,
  generation=excluded.generation, status=excluded.status, revision=excluded.revision, deletedAt=excluded.deletedAt,
  createdAt=excluded.createdAt, updatedAt=excluded.updatedAt`;
const REVISION = `INSERT INTO "Meta" (key,value) VALUES ('revision',?) ON CONFLICT(key) DO UPDATE SET value=CAST(CAST("Meta".value AS INTEGER) + 1 AS TEXT) RETURNING value`;
// UPDATE … FROM (VALUES …) keeps it one statement per chunk
const STATUS = (n: number) =>
  `UPDATE "Resource" SET status = v.column3 FROM (VALUES ${marks(n, "(?,?,?)")}) AS v WHERE "Resource".kind = v.column1 AND "Resource".name = v.column2`;

/** Prepared statements by name (batches mostly repeat a few sizes): the SQL is built once. */
class Statements {
  private cache = new Map<string, Database.Statement>();
  constructor(readonly handle: Database.Database) {}
  get(name: string, sql: () => string): Database.Statement {
    let st = this.cache.get(name);
    if (!st) {
      if (this.cache.size > 128) this.cache.clear();
      st = this.handle.prepare(sql());
      this.cache.set(name, st);
    }
    return st;
  }
}

class SqliteAudit implements SyncAudit {
  /** the rows and their roll-up in one transaction (a savepoint inside the caller's); made once */
  private readonly write: (rows: AuditRow[]) => void;
  constructor(private readonly st: Statements) {
    this.write = st.handle.transaction((rows: AuditRow[]) => {
      for (const c of chunks(rows, BATCH.audit)) st.get(`audit:${c.length}`, () => auditInsertSql(c.length)).run(c.flat());
      rollUp(st.handle, rows);
    });
  }
  get handle() {
    return this.st.handle;
  }
  /** Atomic: the rows with their roll-up, or nothing. */
  insert(rows: AuditRow[]): void {
    this.write(rows);
  }
}

class SqliteLimits implements SyncLimits {
  constructor(private readonly st: Statements) {}
  get handle() {
    return this.st.handle;
  }
  save(s: LimitsSave, last?: () => void): void {
    const now = new Date().toISOString();
    const st = this.st;
    st.handle.transaction(() => {
      for (const c of chunks(s.rates, BATCH.rates)) st.get(`rates:${c.length}`, () => RATES(c.length)).run(c.flatMap(([id, state]) => [id, state, now]));
      for (const c of chunks(s.gone, BATCH.keys)) st.get(`gone:${c.length}`, () => RATES_GONE(c.length)).run(c);
      for (const c of chunks(s.counters, BATCH.counters)) {
        st.get(`counters:${c.length}`, () => COUNTERS(c.length)).run(c.flatMap((x) => [x.keyId, x.period, x.spendMicros, x.tokens, x.requests, now]));
      }
      last?.();
    })();
  }
  load(periods: string[]): LimitsLoaded {
    const st = this.st;
    return {
      rates: st.get("rates:load", () => `SELECT keyId, state FROM "RateState"`).all() as LimitsLoaded["rates"],
      counters: st
        .get(`counters:load:${periods.length}`, () => `SELECT keyId, period, spendMicros, tokens, requests FROM "UsageCounter" WHERE period IN (${marks(periods.length, "?")})`)
        .all(periods) as LimitsLoaded["counters"],
    };
  }
}

/** The async faces (AuditRepo, LimitsRepo) of the synchronous writes: same statements, a settled promise. */
const later = <T>(f: () => T) => new Promise<T>((resolve) => resolve(f()));

function auditRepo(sync: SqliteAudit): AuditRepo & { sync: SyncAudit } {
  return { sync, insert: (rows) => later(() => sync.insert(rows)) };
}

function limitsRepo(sync: SqliteLimits): LimitsRepo & { sync: SyncLimits } {
  return { sync, save: (s) => later(() => sync.save(s)), load: (periods) => later(() => sync.load(periods)) };
}


/** The SQLite store's repositories: `handle` is the direct connection to the Prisma client's file. */
export function sqliteRepos(prisma: PrismaClient, handle: Database.Database, opts: { pruneOffThread?: OffThreadPrune } = {}): SqliteRepos {
  const st = new Statements(handle);
  return { dialect: "sqlite", audit: auditRepo(new SqliteAudit(st)), limits: limitsRepo(new SqliteLimits(st)), resources: resourceRepo(prisma as unknown as RawClient, { revision: REVISION, upsert: RESOURCES, status: STATUS }), tasks: new SqliteTasks(handle, prisma), retention: new SqliteRetention(handle, opts.pruneOffThread) };
}

/** SQLite's repositories always have their synchronous side. */
export interface SqliteRepos extends Repos {
  readonly dialect: "sqlite";
  audit: AuditRepo & { sync: SyncAudit };
  limits: LimitsRepo & { sync: SyncLimits };
}
