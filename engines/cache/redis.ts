// The shared store: every replica reads and writes one Redis (SVC_REDIS_URL). An entry is one
// string with the TTL as its expiry; a sorted set per model orders entries by last use, so a
// model keeps at most maxEntries (the least recently used are popped). Redis away: every call
// fails fast (no offline queue, a short command timeout) and the cache answers a miss.
import { Redis } from "ioredis";
import type { CacheEntry, CacheStore, EntryMeta, PurgeFilter, StoreStats } from "./types";

interface Stored extends CacheEntry {
  model: string;
  keyId: string;
}

export class RedisCacheStore implements CacheStore {
  readonly mode = "redis" as const;
  private readonly r: Redis;
  private down = false;

  constructor(url: string, private readonly prefix: string, private readonly warn: (m: string, extra?: Record<string, unknown>) => void) {
    this.r = new Redis(url, {
      connectionName: "svc-cache",
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: 500,
      retryStrategy: (n) => Math.min(100 * n, 1000),
    });
    this.r.on("error", (e) => this.failed(e));
    this.r.on("ready", () => (this.down = false));
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
      return { body: e.body, requestId: e.requestId, createdAt: e.createdAt };
    } catch (e) {
      return this.failed(e);
    }
  }

  async put(hash: string, entry: CacheEntry, meta: EntryMeta, now: number): Promise<void> {
    if (this.r.status !== "ready") return;
    try {
      const stored: Stored = { ...entry, model: meta.model, keyId: meta.keyId };
      const lru = this.lruKey(meta.model);
      const res = await this.r.multi().set(this.entryKey(hash), JSON.stringify(stored), "PX", meta.ttlMs).zadd(lru, now, hash).sadd(this.modelsKey, meta.model).zcard(lru).exec();
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
    return n;
  }

  async stats(): Promise<StoreStats> {
    let entries = 0;
    for (const m of await this.r.smembers(this.modelsKey)) entries += await this.r.zcard(this.lruKey(m));
    return { entries, bytes: 0 }; // Redis reports memory for the whole server, not for these keys
  }

  async close(): Promise<void> {
    this.r.disconnect();
  }
}
