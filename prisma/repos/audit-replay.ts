// Read-only stream of keyed audit rows for the what-if replay (engines/gateway/replay): one
// ordered pass over a time window, only the columns the gate judges (never a prompt), as arrays.
// Prisma costs ~10-20 µs a row here (its query engine builds an object per row), so this reads
// beside it: SQLite through its own read-only better-sqlite3 connection (a raw statement
// iterator: the store's own connection stays free for writes), PostgreSQL through one pg
// connection with a server-side cursor in a read-only snapshot, the next page fetched while the
// caller works on the last. Rows come in the store's order (timestamp, id), no query per row.
import Database from "better-sqlite3";
import type pg from "pg";

// pg is loaded on first use: an embedded (SQLite) server never loads a PostgreSQL client
const pgClient = async (url: string): Promise<pg.Client> => new (await import("pg")).default.Client({ connectionString: url, application_name: "svc-replay" });

/** [id, time (epoch ms), key id, action, model, provider, status, prompt tokens, completion
 * tokens, cost (micro-USD), IP, metadata (only when it carries "routing", else null)] */
export type ReplayRow = [string, number, string, string, string | null, string | null, string, number, number, number, string | null, string | null];

export interface ReplaySource {
  /** the SQLite file (a store without postgresUrl) */
  file: string;
  /** a shared PostgreSQL store */
  postgresUrl?: string;
}

/** Rows a page: big enough that a page's round trip is noise next to judging it. */
export const REPLAY_PAGE = 10_000;

// metadata is read only when it names routing (the one caller field the replay needs)
const META = (col: string, pg: boolean) => `CASE WHEN ${pg ? `strpos(${col}, '"routing"')` : `instr(${col}, '"routing"')`} > 0 THEN ${col} END`;

const SQLITE = `SELECT id, timestamp, apiKeyId, action, model, provider, status, promptTokens, completionTokens, costMicros, ipAddress, ${META("metadata", false)}
  FROM AuditEntry WHERE apiKeyId IS NOT NULL AND timestamp >= ? AND timestamp < ? ORDER BY timestamp, id`;

const PG = `SELECT id, (extract(epoch FROM timestamp) * 1000)::bigint, apikeyid, action, model, provider, status, prompttokens, completiontokens, costmicros, ipaddress, ${META("metadata", true)}
  FROM auditentry WHERE apikeyid IS NOT NULL AND timestamp >= $1::timestamp AND timestamp < $2::timestamp ORDER BY timestamp, id`;

/** The DateTime text the Prisma SQLite adapter stores ("2026-11-27T12:00:00.000+00:00"). */
const sqliteTime = (ms: number) => new Date(ms).toISOString().slice(0, -1) + "+00:00";
const pgTime = (ms: number) => new Date(ms).toISOString().slice(0, -1);

let dayText = "";
let dayMs = 0;
const d2 = (s: string, i: number) => (s.charCodeAt(i) - 48) * 10 + s.charCodeAt(i + 1) - 48;

/** ms of a stored SQLite DateTime: the stored shape parsed by hand (the date part remembered, a
 * day's rows share it), any other text by Date.parse. */
export function sqliteMs(s: string): number {
  if (s.length !== 29 || s.charCodeAt(10) !== 84 /* T */ || !s.endsWith("+00:00")) return Date.parse(s);
  const day = s.slice(0, 10);
  if (day !== dayText) {
    dayMs = Date.parse(day + "T00:00:00Z");
    dayText = day;
  }
  return dayMs + d2(s, 11) * 3_600_000 + d2(s, 14) * 60_000 + d2(s, 17) * 1000 + (s.charCodeAt(20) - 48) * 100 + d2(s, 21);
}

/** Keyed audit rows with from <= timestamp < to, oldest first, in pages. */
export function replayRows(src: ReplaySource, from: number, to: number, page = REPLAY_PAGE): AsyncGenerator<ReplayRow[]> {
  return src.postgresUrl ? pgRows(src.postgresUrl, from, to, page) : sqliteRows(src.file, from, to, page);
}

async function* sqliteRows(file: string, from: number, to: number, page: number): AsyncGenerator<ReplayRow[]> {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const it = db.prepare(SQLITE).raw(true).iterate(sqliteTime(from), sqliteTime(to)) as IterableIterator<unknown[]>;
    let out: ReplayRow[] = [];
    for (const r of it) {
      r[1] = sqliteMs(r[1] as string);
      out.push(r as ReplayRow);
      if (out.length === page) {
        yield out;
        out = [];
      }
    }
    if (out.length) yield out;
  } finally {
    db.close();
  }
}

// every column as the text PostgreSQL sent: numbers are converted once, below
const TEXT = { getTypeParser: () => (v: string) => v } as unknown as pg.CustomTypesConfig;

async function* pgRows(url: string, from: number, to: number, page: number): AsyncGenerator<ReplayRow[]> {
  const c = await pgClient(url);
  await c.connect();
  let open = false;
  try {
    await c.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    open = true;
    await c.query({ text: `DECLARE replay NO SCROLL CURSOR FOR ${PG}`, values: [pgTime(from), pgTime(to)] });
    const fetch = () => c.query<unknown[]>({ text: `FETCH ${page} FROM replay`, rowMode: "array", types: TEXT });
    let next = fetch();
    for (;;) {
      const { rows } = await next;
      if (rows.length === 0) break;
      // the server reads the next page while this one is judged
      next = rows.length === page ? fetch() : Promise.resolve({ rows: [] as unknown[][] } as pg.QueryResult<unknown[]>);
      for (const r of rows) {
        r[1] = +(r[1] as string);
        r[7] = +(r[7] as string);
        r[8] = +(r[8] as string);
        r[9] = +(r[9] as string);
      }
      yield rows as ReplayRow[];
    }
    await next.catch(() => undefined);
    await c.query("COMMIT");
    open = false;
  } finally {
    if (open) await c.query("ROLLBACK").catch(() => undefined);
    await c.end().catch(() => undefined);
  }
}

/** The oldest audit entry the store still holds (retention may have pruned the start of a window). */
export async function oldestAuditMs(src: ReplaySource): Promise<number | null> {
  if (!src.postgresUrl) {
    const db = new Database(src.file, { readonly: true, fileMustExist: true });
    try {
      const t = (db.prepare("SELECT MIN(timestamp) AS t FROM AuditEntry").get() as { t: string | null }).t;
      return t === null ? null : sqliteMs(t);
    } finally {
      db.close();
    }
  }
  const c = await pgClient(src.postgresUrl);
  await c.connect();
  try {
    const { rows } = await c.query<unknown[]>({ text: "SELECT (extract(epoch FROM MIN(timestamp)) * 1000)::bigint FROM auditentry", rowMode: "array", types: TEXT });
    const v = rows[0]?.[0];
    return v === null || v === undefined ? null : +(v as string);
  } finally {
    await c.end().catch(() => undefined);
  }
}
