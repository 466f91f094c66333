// One reconciler among replicas: the controllers run only on the replica holding the lease, a
// PostgreSQL session-level advisory lock taken on a connection of its own. PostgreSQL releases
// it when that session ends, so when the holder dies (or loses its connection) another replica's
// next attempt takes it over; every replica keeps serving requests meanwhile.
import pg from "pg";

export const LEASE_LOCK = 7_310_002;
/** how long the holder's check of its lease connection may take before the lease counts as lost */
const PROBE_MS = 5_000;

/** `p`, or a rejection after `ms` (a connection cut without a close never answers) */
function within<T>(p: Promise<T>, ms: number): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<never>((_, reject) => (t = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)))]).finally(() => clearTimeout(t));
}

export interface LeaseOptions {
  url: string;
  /** attempt interval while not holding (ms) */
  retryMs?: number;
  onAcquire: () => void | Promise<void>;
  onLose: () => void | Promise<void>;
  log: (msg: string, extra?: Record<string, unknown>) => void;
}

export class Lease {
  private client: pg.Client | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private busy = false;
  held = false;

  constructor(private readonly o: LeaseOptions) {}

  /** First attempt now (awaited), then every retryMs. */
  async start(): Promise<void> {
    await this.attempt();
    this.timer = setInterval(() => void this.attempt(), this.o.retryMs ?? 1000);
    this.timer.unref();
  }

  private async attempt(): Promise<void> {
    if (this.closed || this.busy) return;
    if (this.held) return this.probe();
    this.busy = true;
    try {
      if (!this.client) {
        // keepAlive: the holder's side notices a dead peer too
        const c = new pg.Client({ connectionString: this.o.url, application_name: "svc-lease", keepAlive: true, connectionTimeoutMillis: PROBE_MS });
        c.on("error", () => void this.lost("connection error"));
        c.on("end", () => void this.lost("connection ended"));
        await c.connect();
        this.client = c;
        // PostgreSQL releases the lock when it sees the session gone: with the OS defaults (no
        // probe for 2 h) a holder whose machine died or was cut off would keep the lease that
        // long; these (settable by any role, ignored on a Unix socket) make it about 20 s.
        await c.query("SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 3; SET tcp_keepalives_count = 3").catch(() => undefined);
      }
      // (bounded: on a connection cut without a close it would wait for ever, and no attempt follow)
      const r = await within(this.client.query("SELECT pg_try_advisory_lock($1) AS ok", [LEASE_LOCK]), PROBE_MS);
      if (r.rows[0]?.ok && !this.closed) {
        this.held = true;
        this.o.log("cluster: this replica holds the reconciler lease; controllers start");
        await this.o.onAcquire();
      }
    } catch (e) {
      const c = this.client;
      this.client = null;
      await within(c?.end() ?? Promise.resolve(), PROBE_MS).catch(() => undefined);
      if (!this.closed) this.o.log("cluster: lease attempt failed", { err: String((e as Error)?.message ?? e) });
    } finally {
      this.busy = false;
    }
  }

  /** While held: a connection cut without a close (a network partition, PostgreSQL failing over)
   * raises no event here, but PostgreSQL ends the session and another replica takes the lease;
   * without this check this replica would go on reconciling alongside it for ever. */
  private async probe(): Promise<void> {
    const c = this.client;
    if (!c) return;
    this.busy = true;
    try {
      await within(c.query("SELECT 1"), PROBE_MS);
    } catch (e) {
      if (this.client === c && !this.closed) await this.lost(`its connection does not answer: ${String((e as Error)?.message ?? e)}`);
    } finally {
      this.busy = false;
    }
  }

  private async lost(why: string): Promise<void> {
    const c = this.client;
    this.client = null;
    void c?.end().catch(() => undefined);
    if (!this.held) return;
    this.held = false;
    if (this.closed) return;
    this.o.log(`cluster: reconciler lease lost (${why}); controllers stop until it is taken again`);
    await this.o.onLose();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    const c = this.client;
    this.client = null;
    this.held = false;
    if (c) {
      // (bounded: a connection cut without a close never answers, and shutdown must not hang on it)
      await within(c.query("SELECT pg_advisory_unlock($1)", [LEASE_LOCK]), PROBE_MS).catch(() => undefined);
      await within(c.end(), PROBE_MS).catch(() => undefined);
    }
  }
}
