// The shared store's PostgreSQL connection pool, owned here rather than by the Prisma adapter so
// that closing it is bounded. pg's pool.end() waits for every checked-out connection to come
// back: one whose query never returns (a lock wait, a server that stopped answering) would hold
// svc's stop for ever. Past CLOSE_WAIT_MS, what those connections are doing is read from
// pg_stat_activity (their application_name is this pool's own), logged, and the server is asked
// to end them; their queries fail, the pool ends, and the stop goes on.
import { randomUUID } from "node:crypto";
import pg from "pg";

const CLOSE_WAIT_MS = 5000;

export interface StorePool {
  pool: pg.Pool;
  /** Run `disconnect` (the Prisma client's, which ends this pool), bounded as above. */
  close(disconnect: () => Promise<void>, warn: (msg: string) => void): Promise<void>;
}

const within = (p: Promise<unknown>, ms: number) =>
  new Promise<boolean>((resolve) => {
    const t = setTimeout(() => resolve(false), ms);
    void p.then(() => (clearTimeout(t), resolve(true)));
  });

export function storePool(url: string, max = 10, waitMs = CLOSE_WAIT_MS): StorePool {
  const name = `svc-store-${randomUUID().slice(0, 8)}`;
  const pool = new pg.Pool({ connectionString: url, max, application_name: name });
  return {
    pool,
    async close(disconnect, warn) {
      const done = disconnect().catch(() => undefined);
      if (await within(done, waitMs)) return;
      const admin = new pg.Client({ connectionString: url, application_name: `${name}-close` });
      try {
        await admin.connect();
        const { rows } = await admin.query(
          `SELECT pid, state, wait_event_type, wait_event, left(query, 300) AS query, pg_terminate_backend(pid) AS ended
           FROM pg_stat_activity WHERE application_name = $1`,
          [name],
        );
        warn(`PostgreSQL: connections still busy ${waitMs / 1000} s into stop were ended: ${JSON.stringify(rows)}`);
      } catch (e) {
        warn(`PostgreSQL: connections still busy at stop could not be ended: ${String((e as Error)?.message ?? e)}`);
      } finally {
        await admin.end().catch(() => undefined);
      }
      if (!(await within(done, waitMs))) warn("PostgreSQL: the connection pool did not close; stopping without it");
    },
  };
}
