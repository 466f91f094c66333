// Memory's connections to the shared PostgreSQL: a small pool of its own (raw SQL: one statement
// per read on the recall path, no ORM round trip), BIGINT read as numbers (epoch milliseconds and
// counts fit a double), closed within a bound like the store's (engines/store/pg-pool.ts).
import pg from "pg";
import { closablePool, type ClosablePool } from "../../store/pg-pool";

export type Q = Pick<pg.PoolClient, "query">;

const INT8 = 20;

export function memoryPool(url: string, waitMs?: number): ClosablePool {
  const c = closablePool({
    connectionString: url,
    max: 4,
    types: { getTypeParser: ((oid: number, format?: any) => (oid === INT8 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format))) as any },
  }, "svc-memory", waitMs);
  c.pool.on("error", () => undefined); // an idle client's error: the next query reconnects
  return c;
}

/** Run fn in one transaction on one connection. */
export async function tx<T>(pool: pg.Pool, fn: (c: Q) => Promise<T>): Promise<T> {
  const c = await pool.connect();
  try {
    await c.query("BEGIN");
    const out = await fn(c);
    await c.query("COMMIT");
    return out;
  } catch (e) {
    await c.query("ROLLBACK").catch(() => undefined);
    throw e;
  } finally {
    c.release();
  }
}
