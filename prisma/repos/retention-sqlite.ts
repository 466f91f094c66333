// Audit retention on SQLite: one transaction per batch. A server runs it on the store's
// background thread (prisma/checkpointer.ts, `offload`) while its direct writes wait, so no
// request waits for it; without that thread (a CLI command, or the thread failed) it runs on the
// direct handle, holding this thread for the batch (engines/store/retention.ts keeps those small).
// Timestamps are Prisma's ISO text, so comparing and cutting the day out of them is text work.
// With an archive, the batch is read first, archived, then rolled up and deleted by id (only this
// process prunes this file, one run at a time, so the ids are still there).
import { statSync } from "node:fs";
import type Database from "better-sqlite3";
import { archivedRow, type AuditArchive, type RetentionRepo, type StoreStats } from "./retention";

const OLDEST = `SELECT id FROM "AuditEntry" WHERE timestamp < ? ORDER BY timestamp, id LIMIT ?`;
const BY_IDS = `SELECT value FROM json_each(?)`;
const rollUp = (ids: string) => `INSERT INTO "UsageDaily" (keyId, model, day, requests, errors, promptTokens, completionTokens, costMicros)
  SELECT COALESCE(apiKeyId, ''), COALESCE(model, ''), substr(timestamp, 1, 10), COUNT(*), SUM(status <> 'success'), SUM(promptTokens), SUM(completionTokens), SUM(costMicros)
  FROM "AuditEntry" WHERE id IN (${ids}) GROUP BY 1, 2, 3
  ON CONFLICT(keyId, model, day) DO UPDATE SET requests = requests + excluded.requests, errors = errors + excluded.errors,
  promptTokens = promptTokens + excluded.promptTokens, completionTokens = completionTokens + excluded.completionTokens, costMicros = costMicros + excluded.costMicros`;

/** The DateTime text the Prisma SQLite adapter stores: ISO with "+00:00" for "Z". */
const dbTime = (d: Date) => d.toISOString().slice(0, -1) + "+00:00";

/** A batch's statements, each taking (cutoff as stored text, batch size): the background thread runs them. */
export const SQLITE_RETENTION = { rollUp: rollUp(OLDEST), remove: `DELETE FROM "AuditEntry" WHERE id IN (${OLDEST})` };

/** Retention batches run on another thread (prisma/checkpointer.ts). */
export interface OffThreadPrune {
  run(cutoff: string, batch: number): Promise<number>;
  available(): boolean;
}

export class SqliteRetention implements RetentionRepo {
  private readonly run: (cutoff: string, batch: number) => number;
  private readonly runIds: (ids: string) => number;
  private readonly oldest: Database.Statement;
  private readonly due: Database.Statement;

  constructor(
    private readonly db: Database.Database,
    /** runs SQLITE_RETENTION elsewhere (the background thread) while it is `available`; else on this handle */
    private readonly offload?: OffThreadPrune,
  ) {
    const up = db.prepare(SQLITE_RETENTION.rollUp);
    const del = db.prepare(SQLITE_RETENTION.remove);
    // the same rows both times: nothing else writes between the statements of a transaction here
    this.run = db.transaction((cutoff: string, batch: number) => {
      up.run(cutoff, batch);
      return del.run(cutoff, batch).changes;
    });
    const upIds = db.prepare(rollUp(BY_IDS));
    const delIds = db.prepare(`DELETE FROM "AuditEntry" WHERE id IN (${BY_IDS})`);
    this.runIds = db.transaction((ids: string) => {
      upIds.run(ids);
      return delIds.run(ids).changes;
    });
    this.due = db.prepare(`SELECT 1 FROM "AuditEntry" WHERE timestamp < ? LIMIT 1`);
    this.oldest = db.prepare(`SELECT * FROM "AuditEntry" WHERE timestamp < ? ORDER BY timestamp, id LIMIT ?`);
  }

  /** Whether batches run off this thread (they may then be larger). */
  get offThread(): boolean {
    return this.offload?.available() === true;
  }

  async prune(cutoff: Date, batch: number, archive?: AuditArchive): Promise<number> {
    // nothing past the cutoff (the usual run): answered here, so the retention thread starts only for work
    if (!archive && this.offThread && !this.due.get(dbTime(cutoff))) return 0;
    if (!archive) return this.offThread ? this.offload!.run(dbTime(cutoff), batch) : this.run(dbTime(cutoff), batch);
    const raw = this.oldest.all(dbTime(cutoff), batch) as Array<Record<string, unknown>>;
    if (!raw.length) return 0;
    await archive(raw.map(archivedRow));
    return this.runIds(JSON.stringify(raw.map((r) => r.id)));
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
