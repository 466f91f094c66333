// Write-ahead of audit rows on a shared store (PostgreSQL): each row is first appended, synchronously,
// as one JSON line to a journal file next to the replica's own SQLite file
// (`svc.db.audit-<generation>`) when the request is recorded, before its answer leaves; a line
// written is in the page cache, so it survives kill -9 (as the embedded mode's reservation
// journal, engines/gateway/limits/wal.ts), for a few µs where a SQLite commit a row cost
// ~40-100 µs. Each audit flush then inserts the batch into PostgreSQL (insertMissing: a retry
// after a crash is harmless), and a generation whose rows are all in PostgreSQL is removed. At
// start, whatever a killed replica left in its journals (or, from older versions, in its SQLite
// AuditEntry table) goes to PostgreSQL first (recoverJournal). So, as in embedded mode, an
// answered request keeps its audit row through kill -9.
import { closeSync, ftruncateSync, openSync, readdirSync, readFileSync, unlinkSync, writeSync } from "node:fs";
import path from "node:path";
import type Database from "better-sqlite3";
import { AUDIT_COLUMNS, chunks, type AuditRepo, type AuditRow, type SyncAudit } from "./types";

const COLS = AUDIT_COLUMNS.map((c) => `"${c}"`).join(",");
const DEL = 500;
const RECOVER_BATCH = 1000;
/** a new generation once the current one has this many lines, so done ones can be removed */
const ROTATE_LINES = 20_000;
const COST = AUDIT_COLUMNS.indexOf("costMicros");

const insertMissing = (shared: AuditRepo, rows: AuditRow[]) => (shared.insertMissing ? shared.insertMissing(rows) : shared.insert(rows));
// costMicros, the row's one bigint (audit/rows.ts), as text: a copy with that one value replaced,
// rather than a replacer function (~2x slower) or a copy mapping every value
function line(row: AuditRow): string {
  const c = row[COST];
  if (typeof c !== "bigint") return JSON.stringify(row) + "\n";
  const copy = row.slice();
  copy[COST] = c.toString();
  return JSON.stringify(copy) + "\n";
}

/** The journal files beside the SQLite file `db`, by generation (ascending). */
function journalFiles(db: string): Array<{ gen: number; file: string }> {
  const prefix = `${path.basename(db)}.audit-`;
  let names: string[] = [];
  try {
    names = readdirSync(path.dirname(db));
  } catch {
    return [];
  }
  return names
    .filter((n) => n.startsWith(prefix) && /^\d+$/.test(n.slice(prefix.length)))
    .map((n) => ({ gen: Number(n.slice(prefix.length)), file: path.join(path.dirname(db), n) }))
    .sort((a, b) => a.gen - b.gen);
}

/** The rows of a journal file; a torn last line (the process died in its write) is skipped. */
function readJournal(file: string): AuditRow[] {
  const rows: AuditRow[] = [];
  for (const l of readFileSync(file, "utf8").split("\n")) {
    if (!l) continue;
    try {
      const r = JSON.parse(l) as AuditRow;
      if (Array.isArray(r) && r.length === AUDIT_COLUMNS.length) rows.push(r);
    } catch {
      /* torn line: its request was never answered */
    }
  }
  return rows;
}

class FileJournal {
  private gen: number;
  private fd: number;
  private lines = 0;
  /** rows of each generation not yet in the shared store */
  private readonly open = new Map<number, number>();
  private readonly genOf = new WeakMap<AuditRow, number>();

  constructor(private readonly db: string) {
    this.gen = (journalFiles(db).pop()?.gen ?? 0) + 1;
    this.fd = this.openGen();
  }

  private file(gen: number): string {
    return `${this.db}.audit-${gen}`;
  }

  private openGen(): number {
    this.open.set(this.gen, 0);
    this.lines = 0;
    return openSync(this.file(this.gen), "a");
  }

  append(row: AuditRow): void {
    writeSync(this.fd, line(row));
    this.genOf.set(row, this.gen);
    this.open.set(this.gen, (this.open.get(this.gen) ?? 0) + 1);
    if (++this.lines >= ROTATE_LINES) {
      closeSync(this.fd);
      this.gen++;
      this.fd = this.openGen();
    }
  }

  /** `rows` are in the shared store: remove every past generation with none left. */
  done(rows: AuditRow[]): void {
    for (const r of rows) {
      const g = this.genOf.get(r);
      if (g === undefined) continue;
      this.genOf.delete(r);
      this.open.set(g, (this.open.get(g) ?? 1) - 1);
    }
    if (this.open.get(this.gen) === 0 && this.lines > 0) {
      // every line of the current generation is stored: start it over (appends go to the new end)
      ftruncateSync(this.fd, 0);
      this.lines = 0;
    }
    for (const [g, n] of this.open) {
      if (g === this.gen || n > 0) continue;
      this.open.delete(g);
      try {
        unlinkSync(this.file(g));
      } catch {
        /* already gone */
      }
    }
  }
}

function deleter(handle: Database.Database) {
  const cache = new Map<number, Database.Statement>();
  return (ids: string[]) => {
    for (const c of chunks(ids, DEL)) {
      let st = cache.get(c.length);
      if (!st) cache.set(c.length, (st = handle.prepare(`DELETE FROM "AuditEntry" WHERE id IN (${c.map(() => "?").join(",")})`)));
      st.run(c);
    }
  };
}

/** `shared`'s inserts with the local write-ahead journal in front. */
export function journaledAudit(shared: AuditRepo, local: SyncAudit): AuditRepo {
  const j = new FileJournal(local.handle.name);
  return {
    journal(row: AuditRow) {
      j.append(row);
    },
    async insert(rows: AuditRow[]) {
      await insertMissing(shared, rows);
      j.done(rows);
    },
  };
}

/** Move the rows a previous process left in the local journal to the shared store; how many. */
export async function recoverJournal(shared: AuditRepo, local: SyncAudit): Promise<number> {
  let total = 0;
  for (const { file } of journalFiles(local.handle.name)) {
    const rows = readJournal(file);
    // costMicros went to the line as text (a bigint); PostgreSQL takes it as the column's BIGINT
    for (const r of rows) if (typeof r[COST] === "string") r[COST] = BigInt(r[COST] as string);
    for (const c of chunks(rows, RECOVER_BATCH)) await insertMissing(shared, c);
    unlinkSync(file);
    total += rows.length;
  }
  // older versions journaled into the SQLite file's AuditEntry table
  const read = local.handle.prepare(`SELECT ${COLS} FROM "AuditEntry" ORDER BY id LIMIT 1000`).raw(true);
  const del = deleter(local.handle);
  for (;;) {
    const rows = read.all() as AuditRow[];
    if (!rows.length) return total;
    await insertMissing(shared, rows);
    del(rows.map((r) => String(r[0])));
    total += rows.length;
  }
}
