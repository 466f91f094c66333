// Write-ahead of audit rows on a shared store (PostgreSQL): each row is first inserted, synchronously,
// into the replica's own SQLite file (its AuditEntry table, unused otherwise in this mode) when
// the request is recorded, before its answer leaves; each audit flush then inserts the batch into
// PostgreSQL (insertMissing: a retry after a crash is harmless) and deletes those rows
// from the local journal. At start, whatever a killed replica left in its journal goes to
// PostgreSQL first (recoverJournal). So, as in embedded mode, an answered request keeps its audit
// row through kill -9.
import type Database from "better-sqlite3";
import { AUDIT_COLUMNS, chunks, type AuditRepo, type AuditRow, type SyncAudit } from "./types";

const COLS = AUDIT_COLUMNS.map((c) => `"${c}"`).join(",");
const DEL = 500;

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

const insertMissing = (shared: AuditRepo, rows: AuditRow[]) => (shared.insertMissing ? shared.insertMissing(rows) : shared.insert(rows));

/** `shared`'s inserts with the local write-ahead journal in front. */
export function journaledAudit(shared: AuditRepo, local: SyncAudit): AuditRepo {
  const del = deleter(local.handle);
  return {
    journal(row: AuditRow) {
      local.insert([row]);
    },
    async insert(rows: AuditRow[]) {
      await insertMissing(shared, rows);
      if (local.handle.open) del(rows.map((r) => String(r[0])));
    },
  };
}

/** Move the rows a previous process left in the local journal to the shared store; how many. */
export async function recoverJournal(shared: AuditRepo, local: SyncAudit): Promise<number> {
  const read = local.handle.prepare(`SELECT ${COLS} FROM "AuditEntry" ORDER BY id LIMIT 1000`).raw(true);
  const del = deleter(local.handle);
  let total = 0;
  for (;;) {
    const rows = read.all() as AuditRow[];
    if (!rows.length) return total;
    await insertMissing(shared, rows);
    del(rows.map((r) => String(r[0])));
    total += rows.length;
  }
}
