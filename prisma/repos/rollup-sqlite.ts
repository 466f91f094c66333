// SQLite's usage roll-up for audit inserts (UsageRollup, prisma/migrations/*_usage_rollup): one
// upsert per written batch, its rows summed here, instead of a trigger per row (the trigger's
// upsert cost more than the audit row's own insert). Every writer of AuditEntry on SQLite goes
// through rollUp(), in the transaction that inserts the rows (so the batch and its roll-up commit
// or roll back together): the audit repository's insert and the write-ahead recovery. The
// grouping is the trigger's (UTC day, key, organization, model, provider, action, failure
// status, latency bucket).
import type Database from "better-sqlite3";
import type { AuditRow } from "./types";

const COLS = `"day", "apiKeyId", "organizationId", "model", "provider", "action", "st", "lat", "n", "promptTokens", "completionTokens", "costMicros", "apiKeyName"`;
const upsertSql = (n: number) => `INSERT INTO "UsageRollup" (${COLS}) VALUES ${Array(n).fill("(?,?,?,?,?,?,?,?,?,?,?,?,?)").join(",")}
ON CONFLICT DO UPDATE SET "n" = "n" + excluded."n", "promptTokens" = "promptTokens" + excluded."promptTokens",
  "completionTokens" = "completionTokens" + excluded."completionTokens", "costMicros" = "costMicros" + excluded."costMicros",
  "apiKeyName" = max("apiKeyName", excluded."apiKeyName")`;
/** groups per statement: 13 parameters each, under SQLite's 999 */
const PER_STMT = 70;

// AuditRow positions (prisma/repos/types.ts AUDIT_COLUMNS)
const TS = 1, KEY = 2, KEY_NAME = 3, ORG = 4, ACTION = 6, MODEL = 7, PROVIDER = 8, STATUS = 9, LATENCY = 11, PROMPT = 12, COMPLETION = 13, COST = 15;

/** The trigger's latency bucket: exact below 100 ms, then 10 ms / 100 ms / 1 s steps. */
function bucket(ms: number): number {
  return ms < 100 ? ms : ms < 1000 ? ms - (ms % 10) : ms < 10000 ? ms - (ms % 100) : ms - (ms % 1000);
}
const str = (v: AuditRow[number]) => (v === null || v === undefined ? "" : String(v));
const num = (v: AuditRow[number]) => (typeof v === "number" ? v : Number(v ?? 0));

/** One roll-up row being summed: the group's values, then n and the sums (numbers while they stay
 * exact integers; the rows are summed again as bigints when one does not). */
type Sum = [string, string, string, string, string, string, string, number, number, number, number, number, string];

/** The roll-up rows of a batch, summed per group. Consecutive rows of one group (one key's
 * requests) skip the lookup. */
function groups(rows: AuditRow[]): unknown[][] {
  const by = new Map<string, Sum>();
  let last: Sum | undefined;
  let lastId = "";
  let exact = true;
  for (const r of rows) {
    const status = r[STATUS] === "success" ? "" : str(r[STATUS]);
    const lat = bucket(num(r[LATENCY]));
    const day = String(r[TS]).slice(0, 10); // ISO text, as stored
    const id = `${day}\u0000${str(r[KEY])}\u0000${str(r[ORG])}\u0000${str(r[MODEL])}\u0000${str(r[PROVIDER])}\u0000${str(r[ACTION])}\u0000${status}\u0000${lat}`;
    let g = id === lastId ? last : by.get(id);
    const name = str(r[KEY_NAME]);
    if (!g) {
      g = [day, str(r[KEY]), str(r[ORG]), str(r[MODEL]), str(r[PROVIDER]), str(r[ACTION]), status, lat, 0, 0, 0, 0, name];
      by.set(id, g);
    }
    g[8]++;
    g[9] += num(r[PROMPT]);
    g[10] += num(r[COMPLETION]);
    g[11] += num(r[COST]);
    if (name !== g[12] && Buffer.compare(Buffer.from(name), Buffer.from(g[12])) > 0) g[12] = name; // SQLite's max(): bytes
    last = g;
    lastId = id;
  }
  const out = [...by.values()];
  for (const g of out) exact &&= Number.isSafeInteger(g[9]) && Number.isSafeInteger(g[10]) && Number.isSafeInteger(g[11]);
  return exact ? out : exactGroups(rows, by);
}

/** Sums past 2^53 (or fractional input): summed again as bigints. */
function exactGroups(rows: AuditRow[], by: Map<string, Sum>): unknown[][] {
  const big = (v: AuditRow[number]) => (typeof v === "bigint" ? v : BigInt(Math.trunc(Number(v ?? 0))));
  const sums = new Map<Sum, bigint[]>();
  for (const g of by.values()) sums.set(g, [0n, 0n, 0n]);
  for (const r of rows) {
    const status = r[STATUS] === "success" ? "" : str(r[STATUS]);
    const id = `${String(r[TS]).slice(0, 10)}\u0000${str(r[KEY])}\u0000${str(r[ORG])}\u0000${str(r[MODEL])}\u0000${str(r[PROVIDER])}\u0000${str(r[ACTION])}\u0000${status}\u0000${bucket(num(r[LATENCY]))}`;
    const s = sums.get(by.get(id)!)!;
    s[0] += big(r[PROMPT]);
    s[1] += big(r[COMPLETION]);
    s[2] += big(r[COST]);
  }
  return [...sums].map(([g, s]) => [...g.slice(0, 9), s[0], s[1], s[2], g[12]]);
}

const statements = new WeakMap<Database.Database, Map<number, Database.Statement>>();

function upsert(db: Database.Database, gs: unknown[][]): void {
  let byN = statements.get(db);
  if (!byN) statements.set(db, (byN = new Map()));
  for (let i = 0; i < gs.length; i += PER_STMT) {
    const part = gs.slice(i, i + PER_STMT);
    let st = byN.get(part.length);
    if (!st) {
      if (byN.size > 32) byN.clear();
      byN.set(part.length, (st = db.prepare(upsertSql(part.length))));
    }
    st.run(part.flat());
  }
}

/** Add `rows`, just inserted into AuditEntry, to the roll-up. Call it inside the transaction
 * that inserted them. */
export function rollUp(db: Database.Database, rows: AuditRow[]): void {
  if (rows.length) upsert(db, groups(rows));
}
