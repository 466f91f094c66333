// Audit retention (engines/store/retention.ts): the oldest audit entries past the cutoff are
// deleted a small batch at a time, and in the same transaction their per-key/model/UTC-day totals
// are added to UsageDaily, so usage reports keep what the log no longer holds. Each dialect does
// it in its own SQL (retention-sqlite.ts, retention-postgres.ts; PostgreSQL drops the days wholly
// past the cutoff as partitions). With an archive, the batch's rows are handed to it before they
// are deleted (and not deleted when it fails).

export interface StoreStats {
  /** bytes the store takes (SQLite: the file and its WAL; PostgreSQL: the database) */
  bytes: number;
  /** timestamp of the oldest audit entry (null: none) */
  oldestAudit: Date | null;
  auditRows: number;
}

/** An audit entry as archived: the stored columns, timestamps in ISO UTC, numbers as numbers. */
export type ArchivedAuditRow = Record<(typeof AUDIT_FIELDS)[number], string | number | null>;

/** Receives a batch before its delete commits; throwing keeps the batch in the store. */
export type AuditArchive = (rows: ArchivedAuditRow[]) => Promise<void>;

export interface RetentionRepo {
  /** Prune up to `batch` of the oldest audit entries older than `cutoff`; how many went
   * (PostgreSQL: those on the cutoff's own day and in the default partition; `dropPartitions`
   * takes the days before). */
  prune(cutoff: Date, batch: number, archive?: AuditArchive): Promise<number>;
  /** SQLite: batches without an archive run on the store's background thread, not the caller's */
  readonly offThread?: boolean;
  stats(): Promise<StoreStats>;
  /** PostgreSQL (auditentry partitioned by UTC day): make sure the partitions of `days` UTC days
   * from `from` exist (the retention run: today and the next ones, ahead of their rows); false
   * when another replica was at it (or a lock stayed busy): nothing done, the next run retries. */
  addPartitions?(from: Date, days: number): Promise<boolean>;
  /** PostgreSQL: drop the day partitions wholly before `cutoff`, each first archived and added to
   * the roll-ups as `prune` would; how many entries went (`prune` takes the cutoff's own day). */
  dropPartitions?(cutoff: Date, archive?: AuditArchive): Promise<number>;
}

export const AUDIT_FIELDS = [
  "id", "timestamp", "apiKeyId", "apiKeyName", "organizationId", "requestId", "action", "model", "provider", "status",
  "errorCode", "latencyMs", "promptTokens", "completionTokens", "totalTokens", "costMicros", "metadata", "ipAddress", "userAgent",
  "traceId",
] as const;

/** One raw row (SQLite's camelCase or PostgreSQL's lower-case column names) in the archived shape. */
export function archivedRow(raw: Record<string, unknown>): ArchivedAuditRow {
  const out = {} as ArchivedAuditRow;
  for (const f of AUDIT_FIELDS) {
    const v = raw[f] ?? raw[f.toLowerCase()] ?? null;
    out[f] =
      v instanceof Date ? v.toISOString()
      : typeof v === "bigint" ? Number(v)
      : f === "timestamp" && typeof v === "string" ? new Date(v.includes("T") || v.includes("+") ? v : v + "Z").toISOString()
      : (v as string | number | null);
  }
  return out;
}
