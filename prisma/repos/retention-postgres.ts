// Audit retention on PostgreSQL. auditentry is partitioned by UTC day (auditentry_pYYYYMMDD, plus
// auditentry_default for a day without one; migration audit_partitions), so a day wholly before
// the cutoff goes as one partition: detached (a short ACCESS EXCLUSIVE on auditentry, given up
// after LOCK_WAIT rather than queueing requests behind it), then in one transaction archived,
// added to usagedaily, subtracted from usagerollup, dropped. The cutoff's own day and whatever the
// default partition holds go by batches: one statement per batch deletes the oldest such rows
// (FOR UPDATE SKIP LOCKED: replicas pruning at once take different rows) and adds their totals to
// usagedaily; with an archive, one transaction locks the batch, hands it to the archive, then
// deletes and rolls up exactly those rows. Partition DDL is one replica's at a time (an advisory
// lock; the others skip it and only prune by batch).
import type { PrismaClient } from "../generated-pg/client";
import { archivedRow, type AuditArchive, type RetentionRepo, type StoreStats } from "./retention";

type Tx = Pick<PrismaClient, "$executeRawUnsafe" | "$queryRawUnsafe">;

// advisory lock id (pg-migrate.ts takes 7_310_001, the controllers' lease 7_310_002)
const PARTITION_LOCK = 7_310_100;
const LOCK_WAIT = "500ms";
const ARCHIVE_CHUNK = 5_000;
const DAY_MS = 86_400_000;

const GONE = `apikeyid, model, "timestamp", status, prompttokens, completiontokens, costmicros`;
/** Adds the per-key/model/UTC-day totals of the audit rows in `src` to usagedaily, in one
 * statement answering n (how many rows). `before` holds CTEs defining src when it is not a table
 * (a batch's DELETE … RETURNING); a partition about to be dropped is a table. */
const rollUp = (src: string, before = "") => `WITH ${before}agg AS (
    SELECT COALESCE(apikeyid, '') AS keyid, COALESCE(model, '') AS model, to_char("timestamp", 'YYYY-MM-DD') AS day, COUNT(*)::int AS requests,
      (COUNT(*) FILTER (WHERE status <> 'success'))::int AS errors, SUM(prompttokens) AS prompttokens, SUM(completiontokens) AS completiontokens, SUM(costmicros) AS costmicros
    FROM ${src} GROUP BY 1, 2, 3),
  up AS (
    INSERT INTO usagedaily (keyid, model, day, requests, errors, prompttokens, completiontokens, costmicros) SELECT * FROM agg ORDER BY 1, 2, 3
    ON CONFLICT (keyid, model, day) DO UPDATE SET requests = usagedaily.requests + EXCLUDED.requests, errors = usagedaily.errors + EXCLUDED.errors,
      prompttokens = usagedaily.prompttokens + EXCLUDED.prompttokens, completiontokens = usagedaily.completiontokens + EXCLUDED.completiontokens,
      costmicros = usagedaily.costmicros + EXCLUDED.costmicros
    RETURNING 1)
  SELECT COALESCE(SUM(requests), 0)::int AS n FROM agg`;

// $1 the cutoff, $2 the start of its UTC day, $3 the batch: the oldest rows before the cutoff on
// its own day and in the default partition (the days before go whole, and a batch touching their
// rows would hold locks the detach waits for). auditentry comes first: parse analysis locks tables
// in the order it meets them, and DETACH locks the parent before the default partition.
const BATCH_ROWS = `b1 AS (SELECT "timestamp", id FROM auditentry WHERE "timestamp" >= $2::timestamp AND "timestamp" < $1::timestamp ORDER BY "timestamp", id LIMIT $3::int FOR UPDATE SKIP LOCKED),
  b2 AS (SELECT "timestamp", id FROM auditentry_default WHERE "timestamp" < $1::timestamp ORDER BY "timestamp", id LIMIT $3::int FOR UPDATE SKIP LOCKED),
  batch AS (SELECT * FROM b1 UNION SELECT * FROM b2), `;
const IN_BATCH = `"timestamp" < $1::timestamp AND ("timestamp", id) IN (SELECT "timestamp", id FROM batch)`;
const PRUNE = rollUp("gone", `${BATCH_ROWS}gone AS (DELETE FROM auditentry WHERE ${IN_BATCH} RETURNING ${GONE}), `);
const SELECT_BATCH = `WITH ${BATCH_ROWS.slice(0, -2)} SELECT * FROM auditentry WHERE ${IN_BATCH} ORDER BY "timestamp", id`;
const PRUNE_IDS = rollUp("gone", `gone AS (DELETE FROM auditentry WHERE "timestamp" < $1::timestamp AND id = ANY($2::text[]) RETURNING ${GONE}), `);

/** TIMESTAMP(3) text (the column holds UTC wall time) of an instant. */
const sqlTime = (t: Date) => t.toISOString().replace("T", " ").replace("Z", "");
const dayStart = (t: Date) => new Date(Math.floor(t.getTime() / DAY_MS) * DAY_MS);
const partitionOf = (day: Date) => `auditentry_p${day.toISOString().slice(0, 10).replaceAll("-", "")}`;
const dayOf = (name: string) => `${name.slice(12, 16)}-${name.slice(16, 18)}-${name.slice(18, 20)}`;
const NAME = /^auditentry_p\d{8}$/;

/** A lock not granted within LOCK_WAIT (SQLSTATE 55P03): the work waits for the next run. */
function lockBusy(e: unknown): boolean {
  const seen = new Set<unknown>();
  for (let x = e as { message?: string; code?: string; cause?: unknown; originalCode?: string } | undefined; x && !seen.has(x); x = x.cause as typeof x) {
    seen.add(x);
    if (x.code === "55P03" || x.originalCode === "55P03" || /lock timeout/i.test(String(x.message ?? ""))) return true;
  }
  return false;
}

export class PgRetention implements RetentionRepo {
  constructor(private readonly prisma: PrismaClient) {}

  async prune(cutoff: Date, batch: number, archive?: AuditArchive): Promise<number> {
    const args = [sqlTime(cutoff), sqlTime(dayStart(cutoff)), batch] as const;
    if (!archive) {
      const rows = await this.prisma.$queryRawUnsafe<Array<{ n: number }>>(PRUNE, ...args);
      return rows[0]?.n ?? 0;
    }
    return this.prisma.$transaction(
      async (tx) => {
        const raw = await tx.$queryRawUnsafe<Array<Record<string, unknown>>>(SELECT_BATCH, ...args);
        if (!raw.length) return 0;
        await archive(raw.map(archivedRow));
        const rows = await tx.$queryRawUnsafe<Array<{ n: number }>>(PRUNE_IDS, args[0], raw.map((r) => String(r.id)));
        return rows[0]?.n ?? 0;
      },
      { timeout: 60_000 },
    );
  }

  /** One replica's partition DDL at a time: runs `fn` holding the advisory lock, with lock
   * waits bounded; undefined when another replica holds it or a lock stayed busy. */
  private async exclusive<T>(fn: (tx: Tx) => Promise<T>, timeout = 60_000): Promise<T | undefined> {
    try {
      return await this.prisma.$transaction(
        async (tx) => {
          const [l] = await tx.$queryRawUnsafe<Array<{ ok: boolean }>>(`SELECT pg_try_advisory_xact_lock(${PARTITION_LOCK}) AS ok`);
          if (!l?.ok) return undefined;
          await tx.$executeRawUnsafe(`SET LOCAL lock_timeout = '${LOCK_WAIT}'`);
          return fn(tx);
        },
        { timeout, maxWait: 10_000 },
      );
    } catch (e) {
      if (lockBusy(e)) return undefined;
      throw e;
    }
  }

  async addPartitions(from: Date, days: number): Promise<boolean> {
    const first = dayStart(from).getTime();
    const done = await this.exclusive(async (tx) => {
      for (let i = 0; i < days; i++) await tx.$queryRawUnsafe(`SELECT auditentry_add_partition($1::date)::text`, new Date(first + i * DAY_MS).toISOString().slice(0, 10));
      return true;
    });
    return done === true;
  }

  async dropPartitions(cutoff: Date, archive?: AuditArchive): Promise<number> {
    let total = 0;
    for (;;) {
      // the oldest day partition wholly before the cutoff, attached or left detached by a run that stopped midway
      const [p] = await this.prisma.$queryRawUnsafe<Array<{ name: string; attached: boolean }>>(
        `SELECT c.relname::text AS name, EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = c.oid) AS attached FROM pg_class c
         WHERE c.relkind = 'r' AND pg_table_is_visible(c.oid) AND c.relname ~ '^auditentry_p[0-9]{8}$' AND c.relname::text < $1::text COLLATE "C" ORDER BY c.relname::text COLLATE "C" LIMIT 1`,
        partitionOf(dayStart(cutoff)),
      );
      if (!p || !NAME.test(p.name)) return total;
      if (p.attached) {
        const ok = await this.exclusive(async (tx) => {
          await tx.$executeRawUnsafe(`ALTER TABLE auditentry DETACH PARTITION "${p.name}"`);
          return true;
        });
        if (!ok) return total;
      }
      try {
        const n = await this.exclusive((tx) => this.dropDetached(tx, p.name, archive), 600_000);
        if (n === undefined) return total;
        total += n;
      } catch (e) {
        // nothing dropped: the day goes back into the log (its CHECK spares ATTACH a scan)
        const day = dayOf(p.name);
        await this.exclusive((tx) => tx.$executeRawUnsafe(`ALTER TABLE auditentry ATTACH PARTITION "${p.name}" FOR VALUES FROM ('${day}') TO ('${day}'::date + 1)`)).catch(() => undefined);
        throw e;
      }
    }
  }

  /** Archive, roll up and drop a detached day partition, in the caller's transaction. */
  private async dropDetached(tx: Tx, name: string, archive?: AuditArchive): Promise<number> {
    const [still] = await tx.$queryRawUnsafe<Array<{ t: string | null; attached: boolean }>>(
      `SELECT to_regclass($1)::text AS t, EXISTS (SELECT 1 FROM pg_inherits WHERE inhrelid = to_regclass($1)) AS attached`,
      name,
    );
    // another replica finished it, or put it back after a failed archive (the next turn detaches it again)
    if (!still?.t || still.attached) return 0;
    if (archive) {
      let after: [string, string] | undefined;
      for (;;) {
        const raw = await tx.$queryRawUnsafe<Array<Record<string, unknown>>>(
          `SELECT * FROM "${name}" ${after ? `WHERE ("timestamp", id) > ($1::timestamp, $2::text)` : ""} ORDER BY "timestamp", id LIMIT ${ARCHIVE_CHUNK}`,
          ...(after ?? []),
        );
        if (!raw.length) break;
        await archive(raw.map(archivedRow));
        const last = archivedRow(raw[raw.length - 1]);
        after = [sqlTime(new Date(String(last.timestamp))), String(last.id)];
      }
    }
    const [r] = await tx.$queryRawUnsafe<Array<{ n: number }>>(rollUp(`"${name}"`));
    // the roll-up the batch delete's trigger would leave (DROP fires no DELETE trigger)
    await tx.$queryRawUnsafe(`SELECT usagerollup_subtract_table($1::regclass)::text`, name);
    await tx.$executeRawUnsafe(`DROP TABLE "${name}"`);
    return r?.n ?? 0;
  }

  async stats(): Promise<StoreStats> {
    const [r] = await this.prisma.$queryRawUnsafe<Array<{ bytes: bigint | number; t: Date | null; n: number }>>(
      `SELECT pg_database_size(current_database()) AS bytes, (SELECT MIN("timestamp") FROM auditentry) AS t, (SELECT COUNT(*)::int FROM auditentry) AS n`,
    );
    return { bytes: Number(r.bytes), oldestAudit: r.t ? new Date(r.t) : null, auditRows: r.n };
  }
}
