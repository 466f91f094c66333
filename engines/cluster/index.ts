// Scale-out wiring (README "Scale-out"): several svc replicas behind a load balancer share
//   - the store: PostgreSQL (SVC_DATABASE_URL, engines/store/open.ts);
//   - the limits: Redis (SVC_REDIS_URL): rate buckets and windows, max_requests, budgets and
//     token limits with their reservations, one atomic script call a turn (shared-limits.ts);
//   - store changes: revoked keys marked in Redis before the write returns, and a pub/sub
//     message making every replica re-read the store (bus.ts);
//   - one reconciler: controllers run on the replica holding a PostgreSQL advisory lock
//     (lease.ts); the others serve;
//   - pairing's short-lived state and secure sessions in Redis (pairing-kv.ts); detached agent
//     tasks in PostgreSQL with a heartbeat lease per runner (engines/agents/task-lease.ts).
// Without these variables nothing here runs and svc is the single-process SQLite server.
import path from "node:path";
import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import type { Host } from "../host";
import type { Gateway } from "../gateway";

type ClusterHost = Host & { engines: { gateway?: Gateway } };
import type { ResourceStore } from "../../prisma/resource-store";
import type { StoreDb } from "../store/open";
import type { RedisLimits } from "./shared-limits";
import { USAGE_MARK } from "../gateway/limits/shared";
import type { ClusterBus } from "./bus";
import type { Lease } from "./lease";
import { Retention } from "../store/retention";
import { sharedPairingKv } from "../pairing/kv";
// ioredis and pg load only in shared mode: a single SQLite server never keeps them in memory
const redisParts = async () => {
  const [{ connectRedis, waitReady }, { RedisLimits }, { redisAlerts }, { ClusterBus }, { redisPairingKv }] = await Promise.all([import("./redis"), import("./shared-limits"), import("./shared-alerts"), import("./bus"), import("./pairing-kv")]);
  return { connectRedis, waitReady, RedisLimits, redisAlerts, ClusterBus, redisPairingKv };
};

export interface Cluster {
  replicaId: string;
  /** set when SVC_REDIS_URL is */
  limits?: RedisLimits;
  bus?: ClusterBus;
  lease?: Lease;
  /** audit retention (every server runs it, one replica or many: engines/store/retention.ts) */
  retention: Retention;
  /** start the controllers now (single replica) or once the lease is held (PostgreSQL) */
  runControllers(m: { start(): void; stop(): Promise<void> }): Promise<void>;
  close(): Promise<void>;
}

/** The cluster part of each running svc (status, tests). */
export const clusterOf = new WeakMap<object, Cluster>(); // keyed by the host object

export function redisUrlOf(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const u = env.SVC_REDIS_URL?.trim();
  if (!u) return undefined;
  // unix:///path/to/redis.sock: a Redis on this machine's Unix socket (ioredis reads the path)
  if (!/^(rediss?|unix):\/\//i.test(u)) throw new Error("SVC_REDIS_URL must be a redis://, rediss:// or unix:// URL");
  return u;
}

export async function startCluster(svc: ClusterHost, store: ResourceStore, env: NodeJS.ProcessEnv = process.env): Promise<Cluster> {
  const replicaId = `${process.pid.toString(36)}-${randomBytes(4).toString("hex")}`;
  const pgUrl = (svc.db as StoreDb).postgresUrl;
  const redisUrl = redisUrlOf(env);
  const prefix = env.SVC_REDIS_PREFIX?.trim() || "svc:";
  const log = (msg: string, extra?: Record<string, unknown>) => svc.log.warn(msg, extra);
  const conns: Redis[] = [];
  const retention = new Retention({
    db: svc.db,
    days: () => svc.server.retentionDays,
    archiveDir: () => (svc.server.retentionArchiveDir ? path.resolve(svc.home, svc.server.retentionArchiveDir) : undefined),
    warn: (msg, extra) => svc.log.warn(msg, extra),
    info: (msg, extra) => svc.log.info(msg, extra),
  });
  retention.start();
  const cluster: Cluster = {
    replicaId,
    retention,
    async runControllers(m) {
      if (!pgUrl) return m.start();
      const { Lease } = await import("./lease");
      const lease = new Lease({
        url: pgUrl,
        retryMs: Number(env.SVC_LEASE_RETRY_MS) || 1000,
        onAcquire: () => m.start(),
        onLose: () => m.stop(),
        log: (msg, extra) => svc.log.info(msg, extra),
      });
      cluster.lease = lease;
      await lease.start();
    },
    async close() {
      await retention.close();
      svc.engines.gateway?.alerts.share(undefined);
      await cluster.lease?.close();
      await cluster.bus?.close();
      await cluster.limits?.close();
      store.afterCommit = undefined;
      store.afterStatus = undefined;
      sharedPairingKv.delete(store);
      for (const c of conns) c.disconnect();
    },
  };
  clusterOf.set(svc, cluster);
  if (pgUrl && !redisUrl) log("SVC_DATABASE_URL is set without SVC_REDIS_URL: limits are counted per replica, and other replicas see changes only on their periodic resync");
  if (!redisUrl) return cluster;

  try {
    const { connectRedis, waitReady, RedisLimits, redisAlerts, ClusterBus, redisPairingKv } = await redisParts();
    const cmd = connectRedis(redisUrl, { name: "cmd", onError: (e) => log("cluster: Redis unreachable; requests of limited keys are refused (503) until it is back", { err: e.message }) });
    conns.push(cmd);
    await waitReady(cmd);
    const gw = svc.engines.gateway;
    if (gw) {
      // counters saved in the database go back into a Redis that has none (new, or it lost its
      // data): now, and whenever Redis is found without them. One statement reads the counters
      // and the mark of the copy they come from, so they agree.
      const saved = async () => {
        const [day, month] = gw.limits.periodNames();
        const rows = await svc.db.prisma.usageCounter.findMany({ where: { OR: [{ period: { in: [day, month, "total"] } }, { keyId: USAGE_MARK, period: "mark" }] } });
        const m = rows.find((c) => c.keyId === USAGE_MARK);
        return {
          rows: rows.filter((c) => c !== m).map((c) => ({ e: c.keyId, period: c.period, s: Number(c.spendMicros), t: Number(c.tokens), r: Number(c.requests) })),
          ...(m ? { mark: `${m.tokens}:${m.spendMicros}` } : {}),
        };
      };
      cluster.limits = new RedisLimits(cmd, { prefix, reservationTtlMs: Number(env.SVC_RESERVATION_TTL_MS) || 15 * 60_000, log, saved });
      await cluster.limits.reseed();
      // the lease holder copies the counters to the database at each limits flush (each second),
      // or at most every SVC_USAGE_COPY_MS
      const copyMs = Number(env.SVC_USAGE_COPY_MS) || 0;
      let copiedAt = Date.now();
      gw.limits.useShared(cluster.limits, () => {
        if (pgUrl && !cluster.lease?.held) return false;
        if (copyMs > 0 && Date.now() - copiedAt < copyMs) return false;
        copiedAt = Date.now();
        return true;
      });
      // throttled alerts sent once across replicas; failed authentications counted together
      gw.alerts.share(redisAlerts(cmd, { prefix, replicaId }));
    }
    // pairing's short-lived state (challenges, requests, codes, sessions) seen by every replica
    sharedPairingKv.set(store, redisPairingKv(cmd, prefix));
    const sub = connectRedis(redisUrl, { name: "sub", subscriber: true });
    conns.push(sub);
    const readStatus = () => svc.db.prisma.resource.findMany({ select: { kind: true, name: true, status: true } });
    // the safety-net re-read (a message lost while Redis was away); SVC_STORE_RELOAD_MS=0 turns it off
    const every = Number(env.SVC_STORE_RELOAD_MS?.trim() || NaN);
    const reloadMs = Number.isFinite(every) && every >= 0 ? every : 30_000;
    const bus = new ClusterBus(cmd, sub, store, { prefix, replicaId, log, reloadMs: pgUrl ? reloadMs : 0 }, readStatus);
    cluster.bus = bus;
    store.afterCommit = (refs, rev) => bus.afterCommit(refs, rev);
    store.afterStatus = () => bus.statusWritten();
    await bus.start();
    svc.log.info("cluster: shared limits and store changes on Redis", { replica: replicaId });
    return cluster;
  } catch (e) {
    await cluster.close();
    throw new Error(`cannot use SVC_REDIS_URL: ${String((e as Error)?.message ?? e)}`);
  }
}
