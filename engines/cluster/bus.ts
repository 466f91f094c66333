// Store changes across replicas. Every replica keeps all objects in memory (ResourceStore); a
// desired-state write on one replica is committed to PostgreSQL, then, before the write returns
// (so before the HTTP answer to a revoke), revoked or deleted API keys are added to the Redis
// set that the admission script checks for every request on every replica, and a message on the
// pub/sub channel tells the other replicas to re-read the store (the store's "change" event
// reaches the controllers, whose projections update key caches, policies and routes). A replica that was cut off from Redis re-reads the
// store when it reconnects, and a periodic reload catches anything missed.
import { EventEmitter } from "node:events";
import type { Redis } from "ioredis";
import type { ResourceStore, Ref } from "../../prisma/resource-store";

/** Mark the revoked or deleted API keys among `refs` in Redis (the set every replica's admission
 * script checks), then tell the replicas to re-read the store. Also used by the offline CLI. */
export async function broadcastChange(cmd: Redis, store: ResourceStore, o: { prefix: string; from: string }, refs: Ref[], revision: number): Promise<void> {
  await markRevoked(cmd, store, o.prefix, refs);
  await cmd.publish(`${o.prefix}changes`, JSON.stringify({ from: o.from, revision }));
}

async function markRevoked(cmd: Redis, store: ResourceStore, prefix: string, refs: Ref[]): Promise<void> {
  const gone: string[] = [];
  for (const r of refs) {
    if (r.kind !== "ApiKey") continue;
    const o = store.get(r.kind, r.name);
    if (!o || o.deleting || o.spec?.revoked_at) gone.push(r.name);
  }
  if (gone.length) await cmd.sadd(`${prefix}revoked`, ...gone);
}

export interface BusOptions {
  prefix: string;
  replicaId: string;
  log: (msg: string, extra?: Record<string, unknown>) => void;
  /** safety-net reload interval (ms, 0 = off) */
  reloadMs?: number;
}

/** Events: "reloaded" (revision) after a re-read caused by another replica. */
export class ClusterBus extends EventEmitter {
  private reloading: Promise<void> | null = null;
  private statusRun: Promise<void> | null = null;
  private statusAgain = false;
  private again = false;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  readonly channel: string;

  constructor(
    private readonly cmd: Redis,
    private readonly sub: Redis,
    private readonly store: ResourceStore,
    private readonly o: BusOptions,
    private readonly readStatus: () => Promise<Array<{ kind: string; name: string; status: string }>>,
  ) {
    super();
    this.channel = `${o.prefix}changes`;
  }

  async start(): Promise<void> {
    this.sub.on("message", (ch: string, msg: string) => {
      if (ch !== this.channel) return;
      let m: { from?: string; status?: boolean } = {};
      try {
        m = JSON.parse(msg);
      } catch {
        /* not ours: reload anyway */
      }
      if (m.from === this.o.replicaId) return;
      if (m.status) this.refreshStatus();
      else this.reload();
    });
    // after a reconnect: whatever was published meanwhile is lost, so re-read and re-mark
    this.sub.on("ready", () => {
      this.reload();
      void this.markRevoked(this.store.list({ kind: "ApiKey" }).map((o) => ({ kind: o.kind, name: o.name }))).catch(() => undefined);
    });
    await this.sub.subscribe(this.channel);
    await this.markRevoked(this.store.list({ kind: "ApiKey" }).map((o) => ({ kind: o.kind, name: o.name }))).catch(() => undefined);
    if (this.o.reloadMs) {
      this.timer = setInterval(() => this.reload(), this.o.reloadMs);
      this.timer.unref();
    }
  }

  /** ResourceStore.afterCommit: mark revoked keys, then tell the other replicas. */
  async afterCommit(refs: Ref[], revision: number): Promise<void> {
    try {
      await broadcastChange(this.cmd, this.store, { prefix: this.o.prefix, from: this.o.replicaId }, refs, revision);
    } catch (e) {
      this.o.log("cluster: could not broadcast a store change (other replicas pick it up on their next reload)", { err: String((e as Error)?.message ?? e) });
    }
  }

  private markRevoked(refs: Ref[]): Promise<void> {
    return markRevoked(this.cmd, this.store, this.o.prefix, refs);
  }

  /** ResourceStore.afterStatus: the reconciler wrote status; the others re-read it (so `svc
   * status` and `apply --wait` answer the same on every replica). */
  statusWritten(): void {
    this.cmd.publish(this.channel, JSON.stringify({ from: this.o.replicaId, status: true })).catch(() => undefined);
  }

  private refreshStatus(): void {
    if (this.closed) return;
    if (this.statusRun) {
      this.statusAgain = true;
      return;
    }
    this.statusRun = (async () => {
      do {
        this.statusAgain = false;
        try {
          this.store.applyRemoteStatus(await this.readStatus());
        } catch (e) {
          this.o.log("cluster: status re-read failed", { err: String((e as Error)?.message ?? e) });
        }
      } while (this.statusAgain && !this.closed);
      this.statusRun = null;
    })();
  }

  /** Re-read the store (coalesced: one more run if asked while running). */
  reload(): void {
    if (this.closed) return;
    if (this.reloading) {
      this.again = true;
      return;
    }
    this.reloading = (async () => {
      do {
        this.again = false;
        try {
          const moved = await this.store.reload();
          if (moved) this.emit("reloaded", this.store.revision);
        } catch (e) {
          this.o.log("cluster: store reload failed", { err: String((e as Error)?.message ?? e) });
        }
      } while (this.again && !this.closed);
      this.reloading = null;
    })();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.reloading;
    await this.statusRun;
  }
}
