// Audit retention (engines/store/retention.ts): the oldest audit entries past the cutoff are
// deleted a small batch at a time, and in the same transaction their per-key/model/UTC-day totals
// are added to UsageDaily, so usage reports keep what the log no longer holds. Each dialect does
// it in its own SQL (retention-sqlite.ts, retention-postgres.ts).

export interface StoreStats {
  /** bytes the store takes (SQLite: the file and its WAL; PostgreSQL: the database) */
  bytes: number;
  /** timestamp of the oldest audit entry (null: none) */
  oldestAudit: Date | null;
  auditRows: number;
}

export interface RetentionRepo {
  /** Prune up to `batch` of the oldest audit entries older than `cutoff`; how many went. */
  prune(cutoff: Date, batch: number): Promise<number>;
  stats(): Promise<StoreStats>;
}
