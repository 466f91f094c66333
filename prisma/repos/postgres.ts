// The repositories in PostgreSQL's SQL (SVC_DATABASE_URL, engines/store/open.ts): the lower-case
// table and column names of prisma/postgres/schema.prisma, $1..$n placeholders,
// INSERT … ON CONFLICT … DO UPDATE. Everything goes through the PostgreSQL Prisma client
// (@prisma/adapter-pg), whose connection pool several replicas share the database through; the
// audit insert goes to that pool itself, as a named prepared statement. Parameters go untyped:
// PostgreSQL takes each one's type from the column it lands in (ISO text into TIMESTAMP(3),
// numbers into BIGINT); the audit insert's arrays say their types (AUDIT_TYPES).
import type pg from "pg";
import type { PrismaClient } from "../generated-pg/client";
import { resourceRepo, type RawClient } from "./resources";
import { PgTasks } from "./tasks-postgres";
import { PgRetention } from "./retention-postgres";
import {
  AUDIT_COLUMNS, BATCH, chunks,
  type AuditRepo, type AuditRow, type LimitsLoaded, type LimitsRepo, type LimitsSave, type Repos,
} from "./types";

/** `n` rows of `width` placeholders, numbered from $1: ($1,$2),($3,$4)… */
function values(n: number, width: number, cast = ""): string {
  const rows: string[] = [];
  for (let r = 0; r < n; r++) {
    const cols: string[] = [];
    for (let c = 1; c <= width; c++) cols.push(`$${r * width + c}${cast}`);
    rows.push(`(${cols.join(",")})`);
  }
  return rows.join(",");
}
const list = (n: number) => Array.from({ length: n }, (_, i) => `$${i + 1}`).join(",");

/** The audit columns' types (prisma/postgres/migrations), for AUDIT_UNNEST. */
const AUDIT_TYPES: Record<(typeof AUDIT_COLUMNS)[number], string> = {
  id: "text", timestamp: "timestamp(3)", apiKeyId: "text", apiKeyName: "text", organizationId: "text", requestId: "text",
  action: "text", model: "text", provider: "text", status: "text", errorCode: "text", latencyMs: "int", promptTokens: "int",
  completionTokens: "int", totalTokens: "int", costMicros: "bigint", metadata: "text", ipAddress: "text", userAgent: "text", traceId: "text",
};
/** The audit insert with one array a column: one statement text whatever the row count, prepared
 * once, and ~2.5 µs a row less of the replica's time building parameters than a VALUES list of
 * row × column parameters (PostgreSQL's own work a row is the same, bench/scale.ts findings). */
const AUDIT_UNNEST = `INSERT INTO auditentry (${AUDIT_COLUMNS.map((c) => `"${c.toLowerCase()}"`).join(",")}) SELECT * FROM unnest(${AUDIT_COLUMNS.map((c, i) => `$${i + 1}::${AUDIT_TYPES[c]}[]`).join(",")})`;

const COUNTERS = (n: number) => `INSERT INTO usagecounter (keyid, period, spendmicros, tokens, requests, updatedat) VALUES ${values(n, 6)}
  ON CONFLICT (keyid, period) DO UPDATE SET spendmicros = EXCLUDED.spendmicros, tokens = EXCLUDED.tokens, requests = EXCLUDED.requests, updatedat = EXCLUDED.updatedat`;
const RATES = (n: number) => `INSERT INTO ratestate (keyid, state, updatedat) VALUES ${values(n, 3)}
  ON CONFLICT (keyid) DO UPDATE SET state = EXCLUDED.state, updatedat = EXCLUDED.updatedat`;
const RATES_GONE = (n: number) => `DELETE FROM ratestate WHERE keyid IN (${list(n)})`;

const RESOURCES = (n: number) => `INSERT INTO resource (kind, name, uid, owner, labels, spec, generation, status, revision, deletedat, createdat, updatedat)
  VALUES ${values(n, 12)}
  ON CONFLICT (kind, name) DO UPDATE SET uid = EXCLUDED.uid, owner = EXCLUDED.owner, labels = EXCLUDED.labels, spec = EXCLUDED.spec,
  generation = EXCLUDED.generation, status = EXCLUDED.status, revision = EXCLUDED.revision, deletedat = EXCLUDED.deletedat,
  createdat = EXCLUDED.createdat, updatedat = EXCLUDED.updatedat`;
const REVISION = `INSERT INTO meta (key, value) VALUES ('revision', $1) ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(meta.value AS BIGINT) + 1 AS TEXT) RETURNING value`;
// a VALUES list outside an INSERT has no column to take types from: text, said once per value
const STATUS = (n: number) =>
  `UPDATE resource AS r SET status = v.status FROM (VALUES ${values(n, 3, "::text")}) AS v (kind, name, status) WHERE r.kind = v.kind AND r.name = v.name`;

const ESCAPE = /[\\"]/;
/** Column `i` of `rows` as PostgreSQL's array literal ({"a",NULL,3}): what node-postgres makes of a
 * JS array, without its two regular-expression replaces an element (in the replica's profile under
 * load, bench/dev/scale-profile.ts: 0.65 against 2.4 µs a row). Inside quotes only \ and " are escaped. */
function arrayLiteral(rows: AuditRow[], i: number): string {
  let s = "{";
  for (let r = 0; r < rows.length; r++) {
    const v = rows[r]![i];
    if (r > 0) s += ",";
    if (v === null || v === undefined) s += "NULL";
    else if (typeof v === "string") s += ESCAPE.test(v) ? `"${v.replace(/[\\"]/g, "\\$&")}"` : `"${v}"`;
    else s += String(v);
  }
  return s + "}";
}

type Tx = Pick<PrismaClient, "$executeRawUnsafe" | "$queryRawUnsafe">;

/** PostgreSQL's SQLSTATE for a duplicate key */
const UNIQUE_VIOLATION = "23505";

class PgAudit implements AuditRepo {
  constructor(private readonly pool: pg.Pool) {}
  /** A batch of any size is one statement (AUDIT_UNNEST: 20 array parameters, so no parameter
   * limit to split it under), atomic by itself and one round trip without BEGIN and COMMIT: a
   * named prepared statement, one a form on each pool connection. */
  private async write(rows: AuditRow[], tail: string): Promise<void> {
    if (rows.length === 0) return;
    await this.pool.query({ name: `svc-audit${tail ? "-missing" : ""}`, text: AUDIT_UNNEST + tail, values: AUDIT_COLUMNS.map((_, i) => arrayLiteral(rows, i)) });
  }
  insert(rows: AuditRow[]): Promise<void> {
    return this.write(rows, "");
  }
  /** Optimistic: the plain insert first, which costs PostgreSQL ~7.5 µs a row against ~9 µs with
   * ON CONFLICT's speculative insertion (250-row batches, one backend's CPU); only a batch with a
   * row already there (a replayed journal, a retry of a batch that did commit) fails, whole (one
   * statement), and goes again skipping those rows. */
  async insertMissing(rows: AuditRow[]): Promise<void> {
    try {
      await this.write(rows, "");
    } catch (e) {
      if ((e as { code?: string }).code !== UNIQUE_VIOLATION) throw e;
      // the key is (id, "timestamp") (auditentry is partitioned by day, migration audit_partitions):
      // a replayed row carries its original timestamp, so it is still recognised
      await this.write(rows, ' ON CONFLICT (id, "timestamp") DO NOTHING');
    }
  }
}

class PgLimits implements LimitsRepo {
  constructor(private readonly prisma: PrismaClient) {}
  async save(s: LimitsSave): Promise<void> {
    const now = new Date().toISOString();
    await this.prisma.$transaction(async (p: Tx) => {
      for (const c of chunks(s.rates, BATCH.rates)) await p.$executeRawUnsafe(RATES(c.length), ...c.flatMap(([id, state]) => [id, state, now]));
      for (const c of chunks(s.gone, BATCH.keys)) await p.$executeRawUnsafe(RATES_GONE(c.length), ...c);
      for (const c of chunks(s.counters, BATCH.counters)) {
        await p.$executeRawUnsafe(COUNTERS(c.length), ...c.flatMap((x) => [x.keyId, x.period, x.spendMicros, x.tokens, x.requests, now]));
      }
    });
  }
  async load(periods: string[]): Promise<LimitsLoaded> {
    return {
      rates: await this.prisma.rateState.findMany({ select: { keyId: true, state: true } }),
      counters: await this.prisma.usageCounter.findMany({ where: { period: { in: periods } } }),
    };
  }
}

/** The PostgreSQL store's repositories, on its Prisma client (and its pool, for prepared statements). */
export function postgresRepos(prisma: PrismaClient, pool: pg.Pool): Repos {
  return { dialect: "postgresql", audit: new PgAudit(pool), limits: new PgLimits(prisma), resources: resourceRepo(prisma as unknown as RawClient, { revision: REVISION, upsert: RESOURCES, status: STATUS }), tasks: new PgTasks(prisma), retention: new PgRetention(prisma) };
}
