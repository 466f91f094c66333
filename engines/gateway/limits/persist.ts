// Persistence of the limits (DESIGN.md "Storage"): usage counters (UsageCounter, absolute
// values) and rate windows (RateState, snapshot JSON), written once a second and at close.
// On the direct SQLite handle one synchronous transaction also drains the queued audit rows and
// deletes the Reservation rows of settled requests (limits/wal.ts), so the counters, the audit
// log and the write-ahead log always agree on disk. Without a direct handle (unit tests, other
// stores) the same upserts go through Prisma and there is no write-ahead log.
import type Database from "better-sqlite3";
import type { PrismaClient } from "../../../prisma/client";
import type { PeriodCounter } from "./usage";

export interface FlushSet {
  counters: PeriodCounter[];
  /** [keyId, snapshot JSON] of rate state to save */
  rates: Array<[string, string]>;
  /** keys whose saved rate state goes (deleted keys) */
  gone: string[];
  /** Reservation rows whose requests are settled (their usage is in `counters`) */
  settled: number[];
}

export interface LoadedState {
  rates: Array<{ keyId: string; state: string }>;
  counters: Array<{ keyId: string; period: string; spendMicros: number | bigint; tokens: number | bigint; requests: number | bigint }>;
}

const counterParams = (c: PeriodCounter, now: string) =>
  [c.entity, c.period, Math.max(0, Math.round(c.spend)), Math.max(0, c.tokens), Math.max(0, c.requests - c.inflight), now];

const COUNTER_SQL = (n: number) => `INSERT INTO "UsageCounter" (keyId, period, spendMicros, tokens, requests, updatedAt) VALUES ${Array(n).fill("(?,?,?,?,?,?)").join(",")}
  ON CONFLICT(keyId, period) DO UPDATE SET spendMicros=excluded.spendMicros, tokens=excluded.tokens, requests=excluded.requests, updatedAt=excluded.updatedAt`;
const RATE_SQL = (n: number) => `INSERT INTO "RateState" (keyId, state, updatedAt) VALUES ${Array(n).fill("(?,?,?)").join(",")}
  ON CONFLICT(keyId) DO UPDATE SET state=excluded.state, updatedAt=excluded.updatedAt`;
const inList = (n: number) => Array(n).fill("?").join(",");

function chunks<T>(xs: T[], n: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += n) out.push(xs.slice(i, i + n));
  return out;
}

/** One synchronous transaction on the direct handle; `drainAudit` runs last inside it (if an
 * earlier statement fails it has not taken the audit queue; if it fails, it puts it back). */
export function flushDirect(db: Database.Database, f: FlushSet, drainAudit?: () => void): void {
  const now = new Date().toISOString();
  db.transaction(() => {
    for (const c of chunks(f.rates, 300)) db.prepare(RATE_SQL(c.length)).run(c.flatMap(([id, s]) => [id, s, now]));
    for (const c of chunks(f.gone, 500)) db.prepare(`DELETE FROM "RateState" WHERE keyId IN (${inList(c.length)})`).run(c);
    for (const c of chunks(f.counters, 150)) db.prepare(COUNTER_SQL(c.length)).run(c.flatMap((x) => counterParams(x, now)));
    for (const c of chunks(f.settled, 500)) db.prepare(`DELETE FROM "Reservation" WHERE id IN (${inList(c.length)})`).run(c);
    drainAudit?.();
  })();
}

export async function flushPrisma(prisma: PrismaClient, f: FlushSet): Promise<void> {
  const now = new Date().toISOString();
  await prisma.$transaction(async (p) => {
    for (const c of chunks(f.rates, 300)) await p.$executeRawUnsafe(RATE_SQL(c.length), ...c.flatMap(([id, s]) => [id, s, now]));
    for (const c of chunks(f.gone, 500)) await p.$executeRawUnsafe(`DELETE FROM "RateState" WHERE keyId IN (${inList(c.length)})`, ...c);
    for (const c of chunks(f.counters, 150)) await p.$executeRawUnsafe(COUNTER_SQL(c.length), ...c.flatMap((x) => counterParams(x, now)));
  });
}

export function loadDirect(db: Database.Database, periods: string[]): LoadedState {
  return {
    rates: db.prepare(`SELECT keyId, state FROM "RateState"`).all() as LoadedState["rates"],
    counters: db.prepare(`SELECT keyId, period, spendMicros, tokens, requests FROM "UsageCounter" WHERE period IN (${inList(periods.length)})`).all(periods) as LoadedState["counters"],
  };
}

export async function loadPrisma(prisma: PrismaClient, periods: string[]): Promise<LoadedState> {
  return {
    rates: await prisma.rateState.findMany(),
    counters: await prisma.usageCounter.findMany({ where: { period: { in: periods } } }),
  };
}
