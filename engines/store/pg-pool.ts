// The shared store's PostgreSQL connection pool, owned here rather than by the Prisma adapter so
// that closing it is safe and bounded. Prisma's disconnect strands a transaction it finds in the
// middle of its callback (left idle in transaction after BEGIN, its connection never returned),
// and pg's pool.end() waits for every checked-out connection: either would hold svc's stop for
// ever. So close first lets work on a connection finish (at most CLOSE_WAIT_MS); what is still
// busy then is read from pg_stat_activity (by this pool's own application_name), logged, and
// ended by the server; then the pool closes.
import { randomUUID } from "node:crypto";
import pg from "pg";
import { within } from "../../prisma/waits";

const CLOSE_WAIT_MS = 5000;

export interface StorePool {
  pool: pg.Pool;
  /** Run `disconnect` (the Prisma client's, which ends this pool) as above. */
  close(disconnect: () => Promise<void>, warn: (msg: string) => void): Promise<void>;
}

export function storePool(url: string, max = 10, waitMs = CLOSE_WAIT_MS): StorePool {
  const name = `svc-store-${randomUUID().slice(0, 8)}`;
  const pool = new pg.Pool({ connectionString: url, max, application_name: name });
  return {
    pool,
    async close(disconnect, warn) {
      const busy = () => pool.totalCount > pool.idleCount;
      for (const end = Date.now() + waitMs; busy() && Date.now() < end; ) await new Promise((r) => setTimeout(r, 10));
      if (busy()) await endBusy(url, name, waitMs, warn);
      if (!(await within(disconnect(), waitMs))) warn("PostgreSQL: the connection pool did not close; stopping without it");
    },
  };
}

/** Ask the server to end the pool's connections that are not idle, saying what they were doing. */
async function endBusy(url: string, name: string, waitMs: number, warn: (msg: string) => void): Promise<void> {
  const admin = new pg.Client({ connectionString: url, application_name: `${name}-close` });
  try {
    await admin.connect();
    const { rows } = await admin.query(
      `SELECT pid, state, wait_event_type, wait_event, left(query, 300) AS query, pg_terminate_backend(pid) AS ended
       FROM pg_stat_activity WHERE application_name = $1 AND state IS DISTINCT FROM 'idle'`,
      [name],
    );
    warn(`PostgreSQL: connections still busy ${waitMs / 1000} s into stop were ended: ${JSON.stringify(rows)}`);
  } catch (e) {
    warn(`PostgreSQL: connections still busy at stop could not be ended: ${String((e as Error)?.message ?? e)}`);
  } finally {
    await admin.end().catch(() => undefined);
  }
}
