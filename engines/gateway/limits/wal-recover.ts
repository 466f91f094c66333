// Recovery of write-ahead reservations (wal.ts) at start, before counters are loaded: the rows
// a crash left (the Reservation table, as of the last fold, plus the lines of journals above the
// folded generation) are folded into UsageCounter and AuditEntry in one transaction: spent at
// their reserved amount (never a fresh allowance), counted toward max_requests, an audit row with
// status "interrupted" unless the request's own row made it; their admissions go back to the
// rate windows. A torn last line (the process died inside a write) is a request that was never
// answered, and is skipped.
import { randomBytes } from "node:crypto";
import { readFileSync, unlinkSync } from "node:fs";
import type Database from "better-sqlite3";
import { auditId, auditRow } from "../audit/rows";
import { dbIsoAt } from "../../iso-time";
import { auditInsertSql as insertSql } from "../../../prisma/repos/sqlite";
import { rollUp } from "../../../prisma/repos/rollup-sqlite";
import { COLS, FOLDED_KEY, journals, markFolded, type StoredRow } from "./wal";

/**
 * Fold the rows a crash left into UsageCounter and AuditEntry, in one transaction, and return
 * their admissions per key (for the rate windows). Run at start, before counters are loaded.
 */
export function recover(db: Database.Database): { rows: number; admissions: Map<string, number[]>; generation: number } {
  const folded = Number((db.prepare(`SELECT value FROM "Meta" WHERE key = ?`).get(FOLDED_KEY) as { value: string } | undefined)?.value ?? -1);
  const files = journals(db.name);
  const byId = new Map<number, StoredRow>();
  for (const r of db.prepare(`SELECT * FROM "Reservation"`).all() as StoredRow[]) byId.set(Number(r.id), r);
  for (const j of files) {
    if (j.gen <= folded) continue;
    for (const line of readFileSync(j.file, "utf8").split("\n")) {
      const r = parseLine(line);
      if (r) byId.set(r.id, r);
    }
  }
  const generation = Math.max(folded, ...files.map((j) => j.gen));
  const rows = [...byId.values()].sort((a, b) => Number(a.at) - Number(b.at));
  const admissions = new Map<string, number[]>();
  const done = () => {
    for (const j of files) unlinkSync(j.file);
    return { rows: rows.length, admissions, generation };
  };
  if (rows.length === 0) return done();
  const now = new Date().toISOString();
  const upsert = db.prepare(`INSERT INTO "UsageCounter" (keyId, period, spendMicros, tokens, requests, updatedAt) VALUES (?,?,?,?,1,?)
    ON CONFLICT(keyId, period) DO UPDATE SET spendMicros=spendMicros+excluded.spendMicros, tokens=tokens+excluded.tokens, requests=requests+1, updatedAt=excluded.updatedAt`);
  const audited = db.prepare(`SELECT 1 FROM "AuditEntry" WHERE apiKeyId = ? AND requestId = ? AND timestamp >= ? LIMIT 1`);
  const writeAudit = db.prepare(insertSql(1));
  const tail = randomBytes(4).toString("hex");
  db.transaction(() => {
    let i = 0;
    const written: ReturnType<typeof auditRow>[] = [];
    for (const r of rows) {
      const at = Number(r.at);
      for (const ent of r.entities.split("\n")) {
        for (const period of [r.day, r.month, "total"]) upsert.run(ent, period, Number(r.spendMicros), Number(r.tokens), now);
      }
      let list = admissions.get(r.keyId);
      if (!list) admissions.set(r.keyId, (list = []));
      list.push(at);
      const since = dbIsoAt(at - 1000);
      if (!audited.get(r.keyId, r.requestId, since)) {
        const ts = new Date(at);
        const id = auditId(at, i++, tail);
        const row = auditRow(
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
          );
        writeAudit.run(row);
        written.push(row);
      }
    }
    db.prepare(`DELETE FROM "Reservation"`).run();
    rollUp(db, written); // for GET /v1/usage, in the same transaction
    markFolded(db, generation);
  })();
  return done();
}

/** A journal line as a stored row, or null for a torn or foreign line. */
function parseLine(line: string): StoredRow | null {
  if (!line) return null;
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    return null;
  }
  if (!Array.isArray(v) || v.length !== COLS.length || typeof v[0] !== "number") return null;
  return Object.fromEntries(COLS.map((c, i) => [c, v[i]])) as unknown as StoredRow;
}
