// The audit entries a replay reads: only the fields the gate judges (never a prompt), streamed in
// the store's order (timestamp, id) by keyset pages, so a window of any size is one pass with a
// query per page, never one per entry.
import type { UsageDb } from "../usage-report";
import { dbIsoAt } from "../../iso-time";

export interface ReplayEntry {
  id: string;
  /** epoch ms: the simulated clock of the replay */
  ts: number;
  keyId: string;
  action: string;
  model: string | null;
  provider: string | null;
  status: string;
  promptTokens: number;
  completionTokens: number;
  /** recorded cost in micro-USD */
  costMicros: number;
  ip: string | null;
  /** metadata.routing (strategy, fallback), the one caller field the gate's routing reads */
  routing?: { strategy?: unknown; fallback?: unknown };
}

/** Rows per page: large enough that the page query is noise next to the replay itself. */
export const PAGE = 5000;

// unquoted names: SQLite matches them case-insensitively, PostgreSQL folds them to its lower case
const COLS = `id, timestamp, apiKeyId AS k, action, model, provider, status, promptTokens AS pt, completionTokens AS ct, costMicros AS c, ipAddress AS ip, metadata`;

function at(db: UsageDb, ms: number): { v: unknown } {
  return { v: db.dialect === "postgresql" ? new Date(ms).toISOString().slice(0, -1) : dbIsoAt(ms) };
}

function msOf(v: unknown): number {
  if (v instanceof Date) return v.getTime();
  return Date.parse(String(v));
}

function toEntry(r: Record<string, unknown>): ReplayEntry {
  const meta = String(r.metadata ?? "{}");
  let routing: ReplayEntry["routing"];
  // only entries that carry routing hints pay for a JSON parse
  if (meta.includes('"routing"')) {
    try {
      const m = JSON.parse(meta);
      if (m && typeof m.routing === "object" && m.routing) routing = m.routing;
    } catch {
      /* a truncated marker: no hints */
    }
  }
  return {
    id: String(r.id),
    ts: msOf(r.timestamp),
    keyId: String(r.k),
    action: String(r.action),
    model: (r.model as string | null) ?? null,
    provider: (r.provider as string | null) ?? null,
    status: String(r.status),
    promptTokens: Number(r.pt ?? 0),
    completionTokens: Number(r.ct ?? 0),
    costMicros: Number(r.c ?? 0),
    ip: (r.ip as string | null) ?? null,
    routing,
  };
}

/** Keyed audit entries with from <= timestamp < to, oldest first. */
export async function* auditEntries(db: UsageDb, from: number, to: number, page = PAGE): AsyncGenerator<ReplayEntry[]> {
  const p = (i: number) => (db.dialect === "postgresql" ? `$${i}` : "?");
  const f = at(db, from);
  const t = at(db, to);
  let after: { ts: unknown; id: string } | null = null;
  const cast = db.dialect === "postgresql" ? "::timestamp" : "";
  for (;;) {
    // the next page starts at the last row's time (an index range on timestamp), past its id
    const params: unknown[] = [after ? after.ts : f.v, t.v];
    let sql = `SELECT ${COLS} FROM AuditEntry WHERE apiKeyId IS NOT NULL AND timestamp >= ${p(1)}${cast} AND timestamp < ${p(2)}${cast}`;
    if (after) {
      params.push(after.ts, after.id);
      sql += ` AND (timestamp > ${p(3)}${cast} OR id > ${p(4)})`;
    }
    sql += ` ORDER BY timestamp, id LIMIT ${page}`;
    const rows = await db.all(sql, params);
    if (rows.length === 0) return;
    yield rows.map(toEntry);
    if (rows.length < page) return;
    const last = rows[rows.length - 1];
    after = { ts: db.dialect === "postgresql" ? new Date(msOf(last.timestamp)).toISOString().slice(0, -1) : last.timestamp, id: String(last.id) };
  }
}

/** The oldest entry the store still holds (retention may have pruned the start of a window). */
export async function oldestEntry(db: UsageDb): Promise<number | null> {
  const rows = await db.all(`SELECT MIN(timestamp) AS t FROM AuditEntry`, []);
  const v = rows[0]?.t;
  return v === null || v === undefined ? null : msOf(v);
}
