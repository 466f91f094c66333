// Audit retention on PostgreSQL: one statement per batch deletes the oldest rows past the cutoff
// (FOR UPDATE SKIP LOCKED: replicas pruning at once take different rows) and adds their totals
// to usagedaily, atomically. With an archive, one transaction locks the batch, hands it to the
// archive, then deletes and rolls up exactly those rows.
import type { PrismaClient } from "../generated-pg/client";
import { archivedRow, type AuditArchive, type RetentionRepo, type StoreStats } from "./retention";

const OLDEST = `SELECT id FROM auditentry WHERE "timestamp" < $1::timestamp ORDER BY "timestamp", id LIMIT $2::int FOR UPDATE SKIP LOCKED`;
const prune = (rows: string) => `WITH gone AS (
    DELETE FROM auditentry WHERE id IN (${rows})
    RETURNING apikeyid, model, "timestamp", status, prompttokens, completiontokens, costmicros),
  up AS (
    INSERT INTO usagedaily (keyid, model, day, requests, errors, prompttokens, completiontokens, costmicros)
    SELECT COALESCE(apikeyid, ''), COALESCE(model, ''), to_char("timestamp", 'YYYY-MM-DD'), COUNT(*)::int, (COUNT(*) FILTER (WHERE status <> 'success'))::int,
      SUM(prompttokens), SUM(completiontokens), SUM(costmicros)
    FROM gone GROUP BY 1, 2, 3
    ON CONFLICT (keyid, model, day) DO UPDATE SET requests = usagedaily.requests + EXCLUDED.requests, errors = usagedaily.errors + EXCLUDED.errors,
      prompttokens = usagedaily.prompttokens + EXCLUDED.prompttokens, completiontokens = usagedaily.completiontokens + EXCLUDED.completiontokens,
      costmicros = usagedaily.costmicros + EXCLUDED.costmicros
    RETURNING 1)
  SELECT (SELECT COUNT(*) FROM gone)::int AS n, (SELECT COUNT(*) FROM up)::int AS days`;
const PRUNE = prune(OLDEST);
const PRUNE_IDS = prune(`SELECT unnest($1::text[])`);

export class PgRetention implements RetentionRepo {
  constructor(private readonly prisma: PrismaClient) {}

  async prune(cutoff: Date, batch: number, archive?: AuditArchive): Promise<number> {
    // the column holds UTC wall time (TIMESTAMP(3)): compare with the cutoff's UTC text
    const at = cutoff.toISOString().replace("T", " ").replace("Z", "");
    if (!archive) {
      const rows = await this.prisma.$queryRawUnsafe<Array<{ n: number }>>(PRUNE, at, batch);
      return rows[0]?.n ?? 0;
    }
    return this.prisma.$transaction(
      async (tx) => {
        const raw = await tx.$queryRawUnsafe<Array<Record<string, unknown>>>(`SELECT * FROM auditentry WHERE id IN (${OLDEST}) ORDER BY "timestamp", id`, at, batch);
        if (!raw.length) return 0;
        await archive(raw.map(archivedRow));
        const rows = await tx.$queryRawUnsafe<Array<{ n: number }>>(PRUNE_IDS, raw.map((r) => String(r.id)));
        return rows[0]?.n ?? 0;
      },
      { timeout: 60_000 },
    );
  }

  async stats(): Promise<StoreStats> {
    const [r] = await this.prisma.$queryRawUnsafe<Array<{ bytes: bigint | number; t: Date | null; n: number }>>(
      `SELECT pg_database_size(current_database()) AS bytes, (SELECT MIN("timestamp") FROM auditentry) AS t, (SELECT COUNT(*)::int FROM auditentry) AS n`,
    );
    return { bytes: Number(r.bytes), oldestAudit: r.t ? new Date(r.t) : null, auditRows: r.n };
  }
}
