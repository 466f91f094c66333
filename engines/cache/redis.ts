// The shared store: every replica reads and writes one Redis (SVC_REDIS_URL). An entry is one
// string with the TTL as its expiry; a sorted set per model orders entries by last use, so a
// model keeps at most maxEntries (the least recently used are popped). Redis away: every call
// fails fast (no offline queue, a short command timeout) and the cache answers a miss. Uses of
// answers served from a replica's memory are sent once a second; a purge is published, so every
// replica drops the purged answers from its memory too.
import { Redis } from "ioredis";
import type { CacheEntry, CacheStore, EntryMeta, PurgeFilter, StoreStats } from "./types";
import { fromFields, toFields, type CounterSet } from "./counters";

interface Stored extends CacheEntry {
  model: string;
  keyId: string;
}

const TOUCH_MS = 1000;

export class RedisCacheStore implements CacheStore {
  readonly mode = "redis" as const;
  private readonly r: Redis;
  private down = false;
  /** model -> hash -> last use, of answers served from memory since the last flush */
  private touched = new Map<string, Map<string, number>>();
  private readonly timer: NodeJS.Timeout;
  private sub?: Redis;
  private purged?: (f: PurgeFilter) => void;
  private listening = false;

  constructor(url: string, private readonly prefix: string, private readonly warn: (m: string, extra?: Record<string, unknown>) => void) {
    this.r = new Redis(url, {
      connectionName: "svc-cache",
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: 500,
      retryStrategy: (n) => Math.min(100 * n, 1000),
    });
    this.r.on("error", (e) => this.failed(e));
    this.r.on("ready", () => {
      // purges published while this replica was away were missed: its memory starts over
      if (this.down) this.purged?.({});
      this.down = false;
    });
    this.timer = setInterval(() => this.flush(), TOUCH_MS);
    this.timer.unref();
  }

  private get purgeChannel() {
    return `${this.prefix}cache:purged`;
  }

  /** Answers in memory may be used only while Redis is reachable and purges are heard. */
  ready(): boolean {
    return this.r.status === "ready" && this.listening;
  }

  onPurge(listener: (f: PurgeFilter) => void): void {
    this.purged = listener;
    const sub = (this.sub = this.r.duplicate({ connectionName: "svc-cache-sub", commandTimeout: undefined }));
    let before = false;
    sub.on("error", () => {}); // the main connection reports outages
    sub.on("close", () => (this.listening = false));
    // subscribe on every (re)connection: with no offline queue a command sent earlier fails
    sub.on("ready", () => {
      if (before) listener({}); // back after a drop: a purge may have been missed
      before = true;
      sub.subscribe(this.purgeChannel).then(() => (this.listening = true), () => {});
    });
    sub.on("message", (_ch, msg) => {
      try {
        listener(JSON.parse(msg) as PurgeFilter);
      } catch {}
    });
  }

  touch(hash: string, model: string, now: number): void {
    let m = this.touched.get(model);
    if (!m) this.touched.set(model, (m = new Map()));
    m.set(hash, now);
  }

  private flush(): void {
    if (this.touched.size === 0 || this.r.status !== "ready") return;
    const t = this.touched;
    this.touched = new Map();
    const p = this.r.pipeline();
    for (const [model, m] of t) p.zadd(this.lruKey(model), "XX", ...[...m].flatMap(([h, used]) => [used, h]));
    p.exec().catch((e) => this.failed(e));
  }

  private failed(e: unknown): undefined {
    if (!this.down) this.warn("cache: Redis unreachable; requests are answered as cache misses until it is back", { err: String((e as Error)?.message ?? e) });
    this.down = true;
    return undefined;
  }

  private entryKey = (hash: string) => `${this.prefix}cache:e:${hash}`;
  private lruKey = (model: string) => `${this.prefix}cache:lru:${model}`;
  private get modelsKey() {
    return `${this.prefix}cache:models`;
  }

  async get(hash: string, now: number): Promise<CacheEntry | undefined> {
    if (this.r.status !== "ready") return undefined;
    try {
      const s = await this.r.get(this.entryKey(hash));
      if (!s) return undefined;
      const e = JSON.parse(s) as Stored;
      this.r.zadd(this.lruKey(e.model), now, hash).catch((err) => this.failed(err));
      return { body: e.body, requestId: e.requestId, createdAt: e.createdAt, expiresAt: e.expiresAt, bytes: s.length, keyId: e.keyId };
    } catch (e) {
      return this.failed(e);
    }
  }

  async put(hash: string, entry: CacheEntry, meta: EntryMeta, now: number, text?: string): Promise<void> {
    if (this.r.status !== "ready") return;
    try {
      const rest: Omit<Stored, "body"> = { requestId: entry.requestId, createdAt: entry.createdAt, expiresAt: now + meta.ttlMs, model: meta.model, keyId: meta.keyId };
      // the body as the cache already serialised it, not a second JSON.stringify of it
      const json = `${JSON.stringify(rest).slice(0, -1)},"body":${text ?? JSON.stringify(entry.body)}}`;
      const lru = this.lruKey(meta.model);
      const res = await this.r.multi().set(this.entryKey(hash), json, "PX", meta.ttlMs).zadd(lru, now, hash).sadd(this.modelsKey, meta.model).zcard(lru).exec();
      const n = Number(res?.[3]?.[1] ?? 0);
      if (n <= meta.maxEntries) return;
      const popped = (await this.r.zpopmin(lru, n - meta.maxEntries)).filter((_, i) => i % 2 === 0);
      if (popped.length) await this.r.del(...popped.map(this.entryKey));
    } catch (e) {
      this.failed(e);
    }
  }

  async purge(f: PurgeFilter): Promise<number> {
    const models = f.model ? [f.model] : await this.r.smembers(this.modelsKey);
    let n = 0;
    for (const m of models) {
      const hashes = await this.r.zrange(this.lruKey(m), 0, -1);
      for (let i = 0; i < hashes.length; i += 500) {
        const part = hashes.slice(i, i + 500);
        let doomed = part;
        if (f.keyId) {
          const bodies = await this.r.mget(...part.map(this.entryKey));
          doomed = part.filter((_, j) => bodies[j] !== null && (JSON.parse(bodies[j]!) as Stored).keyId === f.keyId);
        }
        if (!doomed.length) continue;
        n += await this.r.del(...doomed.map(this.entryKey));
        await this.r.zrem(this.lruKey(m), ...doomed);
      }
    }
    await this.r.publish(this.purgeChannel, JSON.stringify(f));
    return n;
  }

  /** Add this replica's counts since its last flush to the cluster's; the cluster's totals. */
  async addCounters(d: CounterSet): Promise<CounterSet> {
    const key = `${this.prefix}cache:counters`;
    const m = this.r.multi();
    for (const [f, n] of toFields(d)) m.hincrbyfloat(key, f, n);
    const res = await m.hgetall(key).exec();
    const last = res?.[res.length - 1];
    if (!last || last[0]) throw last?.[0] ?? new Error("no reply");
    return fromFields(last[1] as Record<string, string>);
  }

  async stats(): Promise<StoreStats> {
    let entries = 0;
    for (const m of await this.r.smembers(this.modelsKey)) entries += await this.r.zcard(this.lruKey(m));
    return { entries, bytes: 0 }; // Redis reports memory for the whole server, not for these keys
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.sub?.disconnect();
    this.r.disconnect();
  }
}
