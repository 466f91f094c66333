// Write-ahead reservations: what makes the committed limits survive kill -9.
//
// A request of a key with budget, token, max_requests or rate limits (its own or a team or
// organization key's above it) is admitted in memory, then its reservation is written as one
// Reservation row; the request is forwarded only once that row is committed. Rows admitted in
// the same event-loop turn share one transaction (group commit, one setImmediate later), on the
// direct SQLite handle in WAL mode with synchronous=NORMAL: a commit survives a process crash
// (not a power loss) and costs no fsync. The row is deleted by the counters flush
// (limits/persist.ts) that writes the request's settled usage and drains its audit row, in the
// same transaction. So after a crash each remaining row is a request whose usage and/or audit
// row is not on disk, and recover() folds it in: spent at its reserved amount (never a fresh
// allowance), counted toward max_requests, its admission replayed into the rate windows, and an
// audit row with status "interrupted" written unless the request's own row made it.
import { randomBytes } from "node:crypto";
import type Database from "better-sqlite3";
import { auditRow } from "../audit/rows";
import { auditInsertSql as insertSql } from "../../../prisma/repos/sqlite";

export interface ReservationRow {
  id: number;
  keyId: string;
  /** usage entities the request counts toward (key, team, organization) */
  entities: string[];
  day: string;
  month: string;
  spend: number;
  promptTokens: number;
  tokens: number;
  /** admission time (ms) */
  at: number;
  requestId: string;
  action: string;
  model: string | null;
  keyName: string | null;
  organizationId: string | null;
  ip: string | null;
}

const COLS = ["id", "keyId", "entities", "day", "month", "spendMicros", "promptTokens", "tokens", "at", "requestId", "action", "model", "keyName", "organizationId", "ipAddress"];
const PER_STMT = 60; // 15 parameters a row, under SQLite's 999 bound-parameter minimum
const insertRes = (n: number) => `INSERT INTO "Reservation" (${COLS.map((c) => `"${c}"`).join(",")}) VALUES ${Array(n).fill(`(${COLS.map(() => "?").join(",")})`).join(",")}`;

/** Raised to the waiting requests when a group commit fails (the request is refused, 503). */
export class ReservationStoreError extends Error {}

export class WriteAhead {
  private pending: unknown[][] = [];
  private batch: { promise: Promise<void>; resolve: () => void; reject: (e: unknown) => void } | null = null;
  private seq = 0;
  private readonly stmts = new Map<number, Database.Statement>();
  /** group commits made (tests, reports) */
  commits = 0;

  constructor(private readonly db: Database.Database) {}

  /** Row ids only need to be unique within a process life: recover() empties the table at start. */
  nextId(): number {
    return ++this.seq;
  }

  /** Queue a row; the promise settles when the group commit that holds it is durable. */
  add(r: ReservationRow): Promise<void> {
    this.pending.push([r.id, r.keyId, r.entities.join("\n"), r.day, r.month, r.spend, r.promptTokens, r.tokens, r.at, r.requestId, r.action, r.model, r.keyName, r.organizationId, r.ip]);
    if (!this.batch) {
      let resolve!: () => void;
      let reject!: (e: unknown) => void;
      const promise = new Promise<void>((a, b) => ((resolve = a), (reject = b)));
      promise.catch(() => undefined); // every waiter handles it; never an unhandled rejection
      this.batch = { promise, resolve, reject };
      setImmediate(() => this.commit());
    }
    return this.batch.promise;
  }

  /** Commit everything queued now (also used at close). */
  commit(): void {
    const b = this.batch;
    const rows = this.pending;
    this.batch = null;
    this.pending = [];
    if (!b) return;
    try {
      if (!this.db.open) throw new Error("database closed");
      // one statement is atomic on its own; more need a transaction around them
      if (rows.length <= PER_STMT) this.insert(rows);
      else {
        this.db.transaction(() => {
          for (let i = 0; i < rows.length; i += PER_STMT) this.insert(rows.slice(i, i + PER_STMT));
        })();
      }
      this.commits++;
      b.resolve();
    } catch (e) {
      b.reject(new ReservationStoreError(`usage limits could not be recorded: ${String((e as Error)?.message ?? e)}`));
    }
  }

  private insert(rows: unknown[][]) {
    let st = this.stmts.get(rows.length);
    if (!st) {
      if (this.stmts.size > 64) this.stmts.clear();
      this.stmts.set(rows.length, (st = this.db.prepare(insertRes(rows.length))));
    }
    st.run(rows.flat());
  }
}

interface StoredRow {
  id: number;
  keyId: string;
  entities: string;
  day: string;
  month: string;
  spendMicros: number;
  promptTokens: number;
  tokens: number;
  at: number;
  requestId: string;
  action: string;
  model: string | null;
  keyName: string | null;
  organizationId: string | null;
  ipAddress: string | null;
}

/**
 * Fold the rows a crash left into UsageCounter and AuditEntry, in one transaction, and return
 * their admissions per key (for the rate windows). Run at start, before counters are loaded.
 */
export function recover(db: Database.Database): { rows: number; admissions: Map<string, number[]> } {
  const rows = db.prepare(`SELECT * FROM "Reservation" ORDER BY "at"`).all() as StoredRow[];
  const admissions = new Map<string, number[]>();
  if (rows.length === 0) return { rows: 0, admissions };
  const now = new Date().toISOString();
  const upsert = db.prepare(`INSERT INTO "UsageCounter" (keyId, period, spendMicros, tokens, requests, updatedAt) VALUES (?,?,?,?,1,?)
    ON CONFLICT(keyId, period) DO UPDATE SET spendMicros=spendMicros+excluded.spendMicros, tokens=tokens+excluded.tokens, requests=requests+1, updatedAt=excluded.updatedAt`);
  const audited = db.prepare(`SELECT 1 FROM "AuditEntry" WHERE apiKeyId = ? AND requestId = ? AND timestamp >= ? LIMIT 1`);
  const writeAudit = db.prepare(insertSql(1));
  const tail = randomBytes(4).toString("hex");
  db.transaction(() => {
    let i = 0;
    for (const r of rows) {
      const at = Number(r.at);
      for (const ent of r.entities.split("\n")) {
        for (const period of [r.day, r.month, "total"]) upsert.run(ent, period, Number(r.spendMicros), Number(r.tokens), now);
      }
      let list = admissions.get(r.keyId);
      if (!list) admissions.set(r.keyId, (list = []));
      list.push(at);
      const since = new Date(at - 1000).toISOString().replace("Z", "+00:00");
      if (!audited.get(r.keyId, r.requestId, since)) {
        const ts = new Date(at);
        const id = `aud_${at.toString(36).padStart(9, "0")}${(i++).toString(36).padStart(6, "0")}${tail}`;
        writeAudit.run(
          auditRow(
            {
              timestamp: ts,
              apiKeyId: r.keyId,
              apiKeyName: r.keyName ?? undefined,
              organizationId: r.organizationId ?? undefined,
              requestId: r.requestId,
              action: r.action,
              model: r.model ?? undefined,
              status: "interrupted",
              errorCode: "interrupted",
              latencyMs: 0,
              promptTokens: Number(r.promptTokens),
              completionTokens: Math.max(0, Number(r.tokens) - Number(r.promptTokens)),
              costMicros: BigInt(Math.round(Number(r.spendMicros))),
              metadata: { recovered: true, note: "svc stopped before this request settled; counted at its reservation" },
              ipAddress: r.ipAddress ?? undefined,
            },
            id,
            ts,
          ),
        );
      }
    }
    db.prepare(`DELETE FROM "Reservation"`).run();
  })();
  return { rows: rows.length, admissions };
}
