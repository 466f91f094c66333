// The store's batched writes of shared state behind small repositories (engines/store/README.md):
// audit rows, usage counters and rate state, resource objects. Model queries go through Prisma
// as they are; these are the multi-row statements Prisma has no batch form for. Each has a
// SQLite implementation (./sqlite.ts) and a PostgreSQL one (./postgres.ts), written in each
// database's own SQL; test/scale/repos.test.ts runs the same contract against both.
import type Database from "better-sqlite3";
import type { TaskRepo } from "./tasks";
import type { RetentionRepo } from "./retention";

/** AuditEntry columns, in the order of an AuditRow's values. */
export const AUDIT_COLUMNS = [
  "id", "timestamp", "apiKeyId", "apiKeyName", "organizationId", "requestId", "action", "model", "provider", "status",
  "errorCode", "latencyMs", "promptTokens", "completionTokens", "totalTokens", "costMicros", "metadata", "ipAddress", "userAgent",
  "traceId",
] as const;

/** One audit row as INSERT parameters, in AUDIT_COLUMNS order (timestamp as ISO text). */
export type AuditRow = Array<string | number | bigint | null>;

export interface AuditRepo {
  /** Insert the rows in one transaction: all of them or none. */
  insert(rows: AuditRow[]): Promise<void>;
  /** Write-ahead (shared stores, ./audit-journal.ts): record one row durably on this replica,
   * synchronously, before the request's answer leaves; `insert` later moves it to the store. */
  journal?(row: AuditRow): void;
  /** The same insert, skipping rows whose id is already there (a retried write-ahead batch). */
  insertMissing?(rows: AuditRow[]): Promise<void>;
  /** SQLite only: the same insert on the direct handle, synchronous (see SyncAudit). */
  readonly sync?: SyncAudit;
}

/** Absolute values of one usage counter (an entity's day, month or total). */
export interface UsageRow {
  keyId: string;
  period: string;
  spendMicros: number;
  tokens: number;
  requests: number;
}

export interface LimitsSave {
  /** upserted: the values replace the saved ones */
  counters: UsageRow[];
  /** [keyId, snapshot JSON] of rate state, upserted */
  rates: Array<[string, string]>;
  /** keys whose saved rate state is deleted */
  gone: string[];
}

export interface LimitsLoaded {
  rates: Array<{ keyId: string; state: string }>;
  counters: Array<{ keyId: string; period: string; spendMicros: number | bigint; tokens: number | bigint; requests: number | bigint }>;
}

export interface LimitsRepo {
  /** Save counters and rate state and delete gone rate state, in one transaction. */
  save(s: LimitsSave): Promise<void>;
  /** Every saved rate state, and the counters of the given periods. */
  load(periods: string[]): Promise<LimitsLoaded>;
  /** SQLite only: the same on the direct handle, synchronous (see SyncLimits). */
  readonly sync?: SyncLimits;
}

/**
 * SQLite's direct better-sqlite3 handle: the audit and limits writes run synchronously there, so
 * one transaction holds a limits flush, the audit rows queued until then and the fold of the
 * write-ahead journal (engines/gateway/limits/wal.ts: the Reservation table and a Meta mark).
 * An answered request then always has its audit row or its reservation on disk.
 */
export interface SyncAudit {
  readonly handle: Database.Database;
  insert(rows: AuditRow[]): void;
}

export interface SyncLimits {
  /** the file's handle: the write-ahead log's table and journals live there too */
  readonly handle: Database.Database;
  /** save, then run `last` (the journal fold and the audit drain): one transaction, rolled back
   * as a whole if any of it throws */
  save(s: LimitsSave, last?: () => void): void;
  load(periods: string[]): LimitsLoaded;
}

/** One Resource row; labels, spec and status as JSON text, times as ISO text. */
export interface ResourceRow {
  kind: string;
  name: string;
  uid: string;
  owner: string;
  labels: string;
  spec: string;
  generation: number;
  status: string;
  revision: number;
  deletedAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface ResourceRepo {
  /** In one transaction: take the next store revision atomically (`first` when the store has
   * none yet, else the stored one + 1; the row stays locked until commit, so concurrent writers
   * in other processes never share one), ask `rows` for the rows stamped with it (it may throw to
   * roll back, e.g. a stale plan), upsert them. Resolves with the revision taken. */
  write(first: number, rows: (revision: number) => ResourceRow[]): Promise<number>;
  /** Replace the status (JSON text) of existing objects, in one transaction. */
  writeStatus(rows: Array<{ kind: string; name: string; status: string }>): Promise<void>;
}

/** The repositories of one opened store (OpenedDb.repos). */
export interface Repos {
  readonly dialect: "sqlite" | "postgresql";
  audit: AuditRepo;
  limits: LimitsRepo;
  resources: ResourceRepo;
  /** detached agent tasks (./tasks.ts) */
  tasks: TaskRepo;
  /** audit retention and store size (./retention.ts) */
  retention: RetentionRepo;
}

/** Split a batch into statements of at most n rows. */
export function chunks<T>(xs: T[], n: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += n) out.push(xs.slice(i, i + n));
  return out;
}

/** Rows per multi-row statement: under SQLite's 32766 bound parameters (PostgreSQL allows 65535). */
export const BATCH = { audit: 1500, counters: 150, rates: 300, keys: 500, resources: 400 } as const;
