// svc's PostgreSQL connection pools (the shared store's, owned here rather than by the Prisma
// adapter, and memory's), closed safely and within a bound. Prisma's disconnect strands a
// transaction it finds in the middle of its callback (left idle in transaction after BEGIN, its
// connection never returned), and pg's pool.end() waits for every checked-out connection: either
// would hold svc's stop for ever. So close first lets work on a connection finish (at most
// CLOSE_WAIT_MS); what is still busy then is read from pg_stat_activity (by this pool's own
// application_name), logged, and ended by the server; then the pool closes.
import { randomUUID } from "node:crypto";
import pg from "pg";
import { within } from "../../prisma/waits";

const CLOSE_WAIT_MS = 5000;

export interface ClosablePool {
  pool: pg.Pool;
  /** Run `disconnect` (by default the pool's own end; the store passes the Prisma client's,
   * which ends this pool) as above. */
  close(warn: (msg: string) => void, disconnect?: () => Promise<void>): Promise<void>;
}

/** The shared store's pool (engines/store/open.ts). */
export const storePool = (url: string, max = 10, waitMs = CLOSE_WAIT_MS): ClosablePool => closablePool({ connectionString: url, max }, "svc-store", waitMs);

/** A pool on `config.connectionString` whose connections are named `<label>-<random>` in
 * pg_stat_activity (what close() ends them by). */
export function closablePool(config: pg.PoolConfig & { connectionString: string }, label: string, waitMs = CLOSE_WAIT_MS): ClosablePool {
  const url = config.connectionString;
  const name = `${label}-${randomUUID().slice(0, 8)}`;
  const pool = new pg.Pool({ ...config, application_name: name });
  return {
    pool,
    async close(warn, disconnect = () => pool.end()) {
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
