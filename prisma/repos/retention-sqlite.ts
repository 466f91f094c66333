// Audit retention on SQLite: one synchronous transaction per batch on the direct handle (a few
// milliseconds for hundreds of rows), so requests writing audit rows wait at most that long.
// Timestamps are Prisma's ISO text, so comparing and cutting the day out of them is text work.
import { statSync } from "node:fs";
import type Database from "better-sqlite3";
import type { RetentionRepo, StoreStats } from "./retention";

const OLDEST = `SELECT id FROM "AuditEntry" WHERE timestamp < ? ORDER BY timestamp, id LIMIT ?`;
const ROLL_UP = `INSERT INTO "UsageDaily" (keyId, model, day, requests, errors, promptTokens, completionTokens, costMicros)
  SELECT COALESCE(apiKeyId, ''), COALESCE(model, ''), substr(timestamp, 1, 10), COUNT(*), SUM(status <> 'success'), SUM(promptTokens), SUM(completionTokens), SUM(costMicros)
  FROM "AuditEntry" WHERE id IN (${OLDEST}) GROUP BY 1, 2, 3
  ON CONFLICT(keyId, model, day) DO UPDATE SET requests = requests + excluded.requests, errors = errors + excluded.errors,
  promptTokens = promptTokens + excluded.promptTokens, completionTokens = completionTokens + excluded.completionTokens, costMicros = costMicros + excluded.costMicros`;
const DELETE = `DELETE FROM "AuditEntry" WHERE id IN (${OLDEST})`;

/** The DateTime text the Prisma SQLite adapter stores: ISO with "+00:00" for "Z". */
const dbTime = (d: Date) => d.toISOString().slice(0, -1) + "+00:00";

export class SqliteRetention implements RetentionRepo {
  private readonly run: (cutoff: string, batch: number) => number;

  constructor(private readonly db: Database.Database) {
    const up = db.prepare(ROLL_UP);
    const del = db.prepare(DELETE);
    // the same rows both times: nothing else writes between the statements of a transaction here
    this.run = db.transaction((cutoff: string, batch: number) => {
      up.run(cutoff, batch);
      return del.run(cutoff, batch).changes;
    });
  }

  async prune(cutoff: Date, batch: number): Promise<number> {
    return this.run(dbTime(cutoff), batch);
  }

  async stats(): Promise<StoreStats> {
    const size = (f: string) => {
      try {
        return statSync(f).size;
      } catch {
        return 0;
      }
    };
    const r = this.db.prepare(`SELECT MIN(timestamp) AS t, COUNT(*) AS n FROM "AuditEntry"`).get() as { t: string | null; n: number };
    return { bytes: size(this.db.name) + size(this.db.name + "-wal"), oldestAudit: r.t ? new Date(r.t) : null, auditRows: r.n };
  }
}
