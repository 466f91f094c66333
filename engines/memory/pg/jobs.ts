// Shared mode's scheduler: debounce, distillation and consolidation run once across replicas.
// Rows of memoryjob, not per-replica timers:
// - kind `distill`, one per session: `dueAt` is its debounce (each turn, on any replica, pushes
//   it back); when it falls due, exactly one replica takes it (FOR UPDATE SKIP LOCKED clears it)
//   and distills. `holder` and `leaseUntil` are the lease of a distillation in progress: any
//   replica distilling the session (a due debounce, a flush, an ingest with flush) takes it
//   first and waits while another holds it, so a session is distilled by one replica at a time.
// - kind `consolidate`: the consolidation interval (`period`), taken by one replica when due.
// - kind `consolidating`, one per agent: the lease of that agent's consolidation.
// A holder renews its leases every HEARTBEAT_MS; a replica that dies leaves leases that run out
// after LEASE_MS, and its session is then taken again by whichever replica polls next.
// Due times are on the engine's clock (epoch ms; tests share a ManualClock); leases on the
// database's clock.
import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import type pg from "pg";
import type { Clock } from "../clock";
import type { Maybe, MemoryScheduler, PendingSession, SchedulerHost } from "../backend";

export const POLL_MS = 250;
export const HEARTBEAT_MS = 5_000;
export const LEASE_MS = 30_000;
/** how long a distillation or consolidation waits for another replica's to finish */
const WAIT_MS = 10 * 60_000;

const LEASE = `now() + ($5::int * interval '1 millisecond')`;
const ACQUIRE = `INSERT INTO memoryjob (kind, agent, conversationid, holder, leaseuntil) VALUES ($1, $2, $3, $4, ${LEASE})
  ON CONFLICT (kind, agent, conversationid) DO UPDATE SET holder = EXCLUDED.holder, leaseuntil = EXCLUDED.leaseuntil
  WHERE memoryjob.holder IS NULL OR memoryjob.leaseuntil < now() RETURNING 1`;
// taken: due and not held, or held by a replica whose lease ran out (it died mid-distillation)
const TAKE = `UPDATE memoryjob AS j SET dueat = CASE WHEN j.kind = 'consolidate' THEN $1::bigint + j.period ELSE NULL END, holder = NULL, leaseuntil = NULL
  FROM (SELECT kind, agent, conversationid FROM memoryjob
        WHERE kind IN ('distill', 'consolidate') AND ((dueat <= $1::bigint AND (holder IS NULL OR leaseuntil < now())) OR (holder IS NOT NULL AND leaseuntil < now()))
        ORDER BY dueat NULLS FIRST LIMIT 20 FOR UPDATE SKIP LOCKED) AS d
  WHERE j.kind = d.kind AND j.agent = d.agent AND j.conversationid = d.conversationid
  RETURNING j.kind, j.agent, j.conversationid AS conv, j.trigger`;

const sessionKey = (agent: string, conv: string) => `${agent}\u0000${conv}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms).unref());

export class PgScheduler implements MemoryScheduler {
  readonly shared = true;
  /** this replica, as it signs the leases it holds */
  readonly holder = `${hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`;
  private host?: SchedulerHost;
  private poll?: NodeJS.Timeout;
  private beat?: NodeJS.Timeout;
  /** the poll in flight: a tick meanwhile waits for it instead of starting another */
  private polling: Promise<void> | null = null;
  /** the clock's time when the poll in flight started (its query reads the clock then or later) */
  private pollingAt = 0;
  /** a poll waiting for the one in flight to finish */
  private queued: Promise<void> | null = null;
  private closed = false;
  private readonly armedHere = new Set<string>();
  private readonly chains = new Map<string, Promise<unknown>>();

  constructor(private readonly pool: pg.Pool, private readonly clock: () => Clock, private readonly pollMs = POLL_MS, private readonly leaseMs = LEASE_MS) {}

  start(host: SchedulerHost): void {
    this.host = host;
    if (this.poll) return;
    this.poll = setInterval(() => void this.tick(), this.pollMs);
    this.poll.unref();
    this.beat = setInterval(() => void this.renew(), Math.min(HEARTBEAT_MS, this.leaseMs / 3));
    this.beat.unref();
  }

  async arm(agent: string, conv: string, ms: number, trigger: string): Promise<void> {
    await this.pool.query(
      `INSERT INTO memoryjob (kind, agent, conversationid, dueat, trigger) VALUES ('distill', $1, $2, $3, $4)
       ON CONFLICT (kind, agent, conversationid) DO UPDATE SET dueat = EXCLUDED.dueat, trigger = EXCLUDED.trigger`,
      [agent, conv, this.clock().now() + ms, trigger],
    );
    this.armedHere.add(sessionKey(agent, conv));
  }

  async disarm(agent: string, conv: string): Promise<void> {
    this.armedHere.delete(sessionKey(agent, conv));
    await this.pool.query(`UPDATE memoryjob SET dueat = NULL WHERE kind = 'distill' AND agent = $1 AND conversationid = $2`, [agent, conv]);
  }

  async armMissing(sessions: PendingSession[], ms: number): Promise<void> {
    if (!sessions.length) return;
    await this.pool.query(
      `INSERT INTO memoryjob (kind, agent, conversationid, dueat) SELECT 'distill', a, c, $3 FROM unnest($1::text[], $2::text[]) AS s (a, c)
       ON CONFLICT (kind, agent, conversationid) DO UPDATE SET dueat = EXCLUDED.dueat WHERE memoryjob.dueat IS NULL AND memoryjob.holder IS NULL`,
      [sessions.map((s) => s.agent), sessions.map((s) => s.conversationId), this.clock().now() + ms],
    );
  }

  armed(agent: string, conv: string): boolean {
    return this.armedHere.has(sessionKey(agent, conv));
  }

  async disarmAgent(agent: string): Promise<void> {
    for (const k of this.armedHere) if (k.startsWith(agent + "\u0000")) this.armedHere.delete(k);
    await this.pool.query(`DELETE FROM memoryjob WHERE kind = 'distill' AND agent = $1 AND holder IS NULL`, [agent]);
  }

  /** One interval row for the cluster; its due time restarts when the period changes. */
  async consolidateEvery(ms: number): Promise<void> {
    await this.pool.query(
      `INSERT INTO memoryjob (kind, agent, conversationid, dueat, trigger, period) VALUES ('consolidate', '', '', $1, 'interval', $2)
       ON CONFLICT (kind, agent, conversationid) DO UPDATE SET dueat = EXCLUDED.dueat, period = EXCLUDED.period WHERE memoryjob.period IS DISTINCT FROM EXCLUDED.period`,
      [this.clock().now() + ms, ms],
    );
  }

  async exclusive<T>(what: "distill" | "consolidate", agent: string, conv: string, fn: () => Maybe<T>): Promise<T> {
    const kind = what === "distill" ? "distill" : "consolidating";
    const key = `${kind}\u0000${agent}\u0000${conv}`;
    // callers in this process queue here; other replicas through the row's lease
    const prev = this.chains.get(key) ?? Promise.resolve();
    const run = prev.catch(() => undefined).then(async () => {
      await this.acquire(kind, agent, conv);
      try {
        return await fn();
      } finally {
        await this.release(kind, agent, conv).catch((e) => this.host?.warn("memory could not release a lease (it runs out by itself)", { err: String(e?.message ?? e) }));
      }
    });
    this.chains.set(key, run);
    void run.finally(() => this.chains.get(key) === run && this.chains.delete(key)).catch(() => undefined);
    return run;
  }

  private async acquire(kind: string, agent: string, conv: string): Promise<void> {
    const end = Date.now() + WAIT_MS;
    for (let wait = 25; ; wait = Math.min(wait * 2, 500)) {
      if ((await this.pool.query(ACQUIRE, [kind, agent, conv, this.holder, this.leaseMs])).rowCount) return;
      if (this.closed || Date.now() > end) throw Object.assign(new Error(`another replica still holds the ${kind} lease of ${agent}`), { code: "lease_busy" });
      await sleep(wait);
    }
  }

  private async release(kind: string, agent: string, conv: string): Promise<void> {
    const args = [kind, agent, conv, this.holder];
    // nothing left to run: the row goes; a turn meanwhile set a due time: it stays for the poll
    const gone = await this.pool.query(`DELETE FROM memoryjob WHERE kind = $1 AND agent = $2 AND conversationid = $3 AND holder = $4 AND dueat IS NULL AND period IS NULL`, args);
    if (!gone.rowCount) await this.pool.query(`UPDATE memoryjob SET holder = NULL, leaseuntil = NULL WHERE kind = $1 AND agent = $2 AND conversationid = $3 AND holder = $4`, args);
  }

  /** Take what fell due (one replica gets each row) and hand it to the engine; resolves once
   * what it took is handed over. A tick during a poll that read the clock at this time or later
   * resolves with that poll; during one that read an earlier time (the clock has moved since: it
   * may miss what fell due meanwhile) it polls again after it. At most one poll waits: it reads
   * the clock when it starts, so every tick until then resolves with it. */
  tick(): Promise<void> {
    if (this.closed || !this.host) return Promise.resolve();
    const host = this.host;
    if (this.queued) return this.queued;
    if (this.polling && this.pollingAt >= this.clock().now()) return this.polling;
    const run = async () => {
      this.queued = null;
      this.pollingAt = this.clock().now();
      await this.take(host);
    };
    let poll: Promise<void>;
    if (this.polling) this.queued = poll = this.polling.then(run);
    else poll = run();
    this.polling = poll;
    void poll.finally(() => {
      if (this.polling === poll) this.polling = null;
    });
    return poll;
  }

  private async take(host: SchedulerHost): Promise<void> {
    try {
      const rows = (await this.pool.query(TAKE, [this.clock().now()])).rows as Array<{ kind: string; agent: string; conv: string; trigger: string }>;
      for (const r of rows) {
        if (r.kind === "consolidate") host.consolidationDue();
        else {
          this.armedHere.delete(sessionKey(r.agent, r.conv));
          host.due(r.agent, r.conv, r.trigger);
        }
      }
    } catch (e: any) {
      if (!this.closed) host.warn("memory job poll failed", { err: String(e?.message ?? e) });
    }
  }

  private async renew(): Promise<void> {
    if (this.closed) return;
    await this.pool.query(`UPDATE memoryjob SET leaseuntil = now() + ($2::int * interval '1 millisecond') WHERE holder = $1`, [this.holder, this.leaseMs]).catch((e) => this.host?.warn("memory lease renewal failed", { err: String(e?.message ?? e) }));
  }

  reset(): void {
    this.armedHere.clear();
  }

  /** Stop polling; leases still held are released by their runs (the engine waits for them). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.poll) clearInterval(this.poll);
    if (this.beat) clearInterval(this.beat);
    await this.polling;
  }
}
