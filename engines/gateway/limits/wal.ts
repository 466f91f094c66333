// Write-ahead reservations: what makes the committed limits survive kill -9.
//
// A request of a key with budget, token, max_requests or rate limits (its own or a team or
// organization key's above it) is admitted in memory, then its reservation is appended as one
// JSON line to a journal file next to the store (`svc.db.reservations-<generation>`). Rows
// admitted in the same event-loop turn share one write(2) (group commit, one setImmediate later);
// a written line is in the page cache, so it survives a process crash (not a power loss), as a
// SQLite commit with synchronous=NORMAL does, for ~8 µs instead of ~40-100 µs of a commit.
// The request goes upstream meanwhile; its answer waits for the write (engines/gateway/pipeline).
//
// Each counters flush (limits/persist.ts) folds the journal in the same SQLite transaction that
// writes the settled usage and drains the audit rows: the Reservation table is replaced by the
// rows still in flight and Meta "reservations.folded" is set to the journal's generation; after
// the commit the journal starts a new generation and the folded file is removed. So after a
// crash the requests whose usage and/or audit row is not on disk are exactly the table's rows
// plus the lines of unfolded journals, and recover() (wal-recover.ts) folds them in.
import { closeSync, openSync, readdirSync, unlinkSync, writeSync } from "node:fs";
import path from "node:path";
import type Database from "better-sqlite3";

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

/** A row as the Reservation table and a journal line hold it (named by COLS). */
export type StoredRow = Omit<ReservationRow, "entities" | "spend" | "ip"> & {
  /** the entity ids, one per line */
  entities: string;
  spendMicros: number;
  ipAddress: string | null;
};

/** Column order of a row, in the Reservation table and in a journal line (a JSON array). */
export const COLS = ["id", "keyId", "entities", "day", "month", "spendMicros", "promptTokens", "tokens", "at", "requestId", "action", "model", "keyName", "organizationId", "ipAddress"];
type Values = unknown[];
/** A row as its journal line (JSON array in COLS order, with its newline): the form a written
 * row is kept in memory until the row settles, parsed back only by a fold. */
type Line = string;
const PER_STMT = 60; // 15 parameters a row, under SQLite's 999 bound-parameter minimum
const insertRes = (n: number) => `INSERT INTO "Reservation" (${COLS.map((c) => `"${c}"`).join(",")}) VALUES ${Array(n).fill(`(${COLS.map(() => "?").join(",")})`).join(",")}`;
export const FOLDED_KEY = "reservations.folded";

/** Record, inside the caller's transaction, that the journals up to `gen` are folded. */
export function markFolded(db: Database.Database, gen: number): void {
  db.prepare(`INSERT INTO "Meta" (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`).run(FOLDED_KEY, String(gen));
}

/** The journal files of a store file, by generation (ascending). */
export function journals(dbFile: string): Array<{ gen: number; file: string }> {
  const dir = path.dirname(dbFile);
  const prefix = `${path.basename(dbFile)}.reservations-`;
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => n.startsWith(prefix) && /^\d+$/.test(n.slice(prefix.length)))
    .map((n) => ({ gen: Number(n.slice(prefix.length)), file: path.join(dir, n) }))
    .sort((a, b) => a.gen - b.gen);
}

/** A row as its journal line. */
function lineOf(r: ReservationRow): Line {
  return JSON.stringify([r.id, r.keyId, r.entities.join("\n"), r.day, r.month, r.spend, r.promptTokens, r.tokens, r.at, r.requestId, r.action, r.model, r.keyName, r.organizationId, r.ip]) + "\n";
}

/** The batch promises whose group commit is written: a request whose reservation is already on
 * disk when its answer comes back (the usual case: the commit runs in the turn after admission)
 * need not await it, which saves every request a promise and a microtask turn. */
const writtenBatches = new WeakSet<Promise<void>>();
export const isWritten = (p: Promise<void>): boolean => writtenBatches.has(p);

/** Raised to the waiting requests when a group commit fails (the request is refused, 503). */
export class ReservationStoreError extends Error {}

export class WriteAhead {
  /** queued for the next group commit; made into lines there, off the request's path */
  private pending = new Map<number, ReservationRow>();
  /** written and not settled: what a fold keeps in the Reservation table */
  private readonly live = new Map<number, Line>();
  private batch: { promise: Promise<void>; resolve: () => void; reject: (e: unknown) => void } | null = null;
  private seq = 0;
  private fd = -1;
  /** the generation appends go to; set by start() after recovery */
  private gen = 0;
  private readonly stmts = new Map<number, Database.Statement>();
  /** group commits made (tests, reports) */
  commits = 0;
  /** rows were written or settled since the last fold */
  changed = false;

  constructor(private readonly db: Database.Database) {}

  private journal(gen: number): string {
    return `${this.db.name}.reservations-${gen}`;
  }

  /** After recovery: append to a generation above every folded or leftover one. */
  start(after: number): void {
    this.gen = after + 1;
  }

  /** Row ids only need to be unique within a process life: recovery folds every row at start. */
  nextId(): number {
    return ++this.seq;
  }

  /** Queue a row; the promise settles when the group commit that holds it is written. */
  add(r: ReservationRow): Promise<void> {
    this.pending.set(r.id, r);
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

  /** The request settled: its usage is in the counters, so the next fold drops its row (one not
   * written yet is never written). */
  settle(id: number): void {
    if (!this.pending.delete(id) && this.live.delete(id)) this.changed = true;
  }

  /** Write everything queued now (also used at close). */
  commit(): void {
    const b = this.batch;
    const rows = this.pending;
    this.batch = null;
    this.pending = new Map();
    if (!b) return;
    try {
      if (rows.size > 0) {
        if (this.fd < 0) this.fd = openSync(this.journal(this.gen), "a");
        const lines = [...rows.values()].map(lineOf);
        const text = lines.join("");
        const n = writeSync(this.fd, text);
        const want = Buffer.byteLength(text);
        if (n !== want) throw new Error(`short write to the reservation journal (${n} of ${want} bytes)`);
        let i = 0;
        for (const id of rows.keys()) this.live.set(id, lines[i++]);
        this.changed = true;
      }
      this.commits++;
      writtenBatches.add(b.promise);
      b.resolve();
    } catch (e) {
      // a torn line must not run into the next one: later rows go to a fresh generation
      this.closeJournal();
      this.gen++;
      b.reject(new ReservationStoreError(`usage limits could not be recorded: ${String((e as Error)?.message ?? e)}`));
    }
  }

  /** Inside the flush transaction: the table becomes the rows in flight, and the journals up to
   * this generation count as folded. Changes nothing in memory (the transaction may roll back). */
  fold(): void {
    this.db.prepare(`DELETE FROM "Reservation"`).run();
    const rows = [...this.live.values()].map((line) => JSON.parse(line) as Values);
    for (let i = 0; i < rows.length; i += PER_STMT) this.insert(rows.slice(i, i + PER_STMT));
    markFolded(this.db, this.gen);
  }

  /** After the flush committed: appends go to a new generation, the folded ones are removed. */
  folded(): void {
    const done = this.gen;
    this.changed = false;
    this.closeJournal();
    this.gen++;
    for (const j of journals(this.db.name)) {
      if (j.gen > done) continue;
      try {
        unlinkSync(j.file);
      } catch {
        /* already gone */
      }
    }
  }

  close(): void {
    this.closeJournal();
  }

  private closeJournal(): void {
    if (this.fd >= 0) {
      try {
        closeSync(this.fd);
      } catch {
        /* closed */
      }
    }
    this.fd = -1;
  }

  private insert(rows: Values[]) {
    let st = this.stmts.get(rows.length);
    if (!st) {
      if (this.stmts.size > 64) this.stmts.clear();
      this.stmts.set(rows.length, (st = this.db.prepare(insertRes(rows.length))));
    }
    st.run(rows.flat());
  }
}
