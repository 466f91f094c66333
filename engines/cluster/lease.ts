// One reconciler among replicas: the controllers run only on the replica holding the lease, a
// PostgreSQL session-level advisory lock taken on a connection of its own. PostgreSQL releases
// it when that session ends, so when the holder dies (or loses its connection) another replica's
// next attempt takes it over; every replica keeps serving requests meanwhile.
import pg from "pg";

export const LEASE_LOCK = 7_310_002;

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
    if (this.closed || this.busy || this.held) return;
    this.busy = true;
    try {
      if (!this.client) {
        const c = new pg.Client({ connectionString: this.o.url, application_name: "svc-lease" });
        c.on("error", () => void this.lost("connection error"));
        c.on("end", () => void this.lost("connection ended"));
        await c.connect();
        this.client = c;
      }
      const r = await this.client.query("SELECT pg_try_advisory_lock($1) AS ok", [LEASE_LOCK]);
      if (r.rows[0]?.ok && !this.closed) {
        this.held = true;
        this.o.log("cluster: this replica holds the reconciler lease; controllers start");
        await this.o.onAcquire();
      }
    } catch (e) {
      const c = this.client;
      this.client = null;
      await c?.end().catch(() => undefined);
      if (!this.closed) this.o.log("cluster: lease attempt failed", { err: String((e as Error)?.message ?? e) });
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
      await c.query("SELECT pg_advisory_unlock($1)", [LEASE_LOCK]).catch(() => undefined);
      await c.end().catch(() => undefined);
    }
  }
}
