// The embedded store: a SQLite file of its own next to the store (cache.sqlite), so answers
// survive a restart and the cache's writes never wait on the store's transactions. Each model
// keeps at most its maxEntries; the least recently used are evicted. Last-use times are kept in
// memory and written once a second, so a hit costs one indexed read.
import Database from "better-sqlite3";
import type { CacheEntry, CacheStore, EntryMeta, PurgeFilter, StoreStats } from "./types";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS entries (
  hash TEXT PRIMARY KEY,
  model TEXT NOT NULL,
  scope TEXT NOT NULL,
  key_id TEXT NOT NULL,
  created INTEGER NOT NULL,
  expires INTEGER NOT NULL,
  used INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  request_id TEXT NOT NULL,
  body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_model_used ON entries(model, used);
CREATE INDEX IF NOT EXISTS entries_key ON entries(key_id);
`;

export class SqliteCacheStore implements CacheStore {
  readonly mode = "sqlite" as const;
  private readonly db: Database.Database;
  private readonly q: {
    get: Database.Statement;
    put: Database.Statement;
    del: Database.Statement;
    touch: Database.Statement;
    count: Database.Statement;
    evict: Database.Statement;
    expire: Database.Statement;
  };
  private readonly counts = new Map<string, number>();
  private touched = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;
  private puts = 0;

  constructor(file: string, flushMs = 1000) {
    this.db = new Database(file);
    this.db.pragma("journal_mode = WAL");
    this.db.pragma("synchronous = NORMAL");
    this.db.pragma("busy_timeout = 2000");
    this.db.exec(SCHEMA);
    this.q = {
      get: this.db.prepare("SELECT body, created, expires, request_id, key_id FROM entries WHERE hash = ?"),
      put: this.db.prepare("INSERT OR REPLACE INTO entries (hash, model, scope, key_id, created, expires, used, bytes, request_id, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
      del: this.db.prepare("DELETE FROM entries WHERE hash = ?"),
      touch: this.db.prepare("UPDATE entries SET used = ? WHERE hash = ?"),
      count: this.db.prepare("SELECT COUNT(*) AS n FROM entries WHERE model = ?"),
      evict: this.db.prepare("DELETE FROM entries WHERE hash IN (SELECT hash FROM entries WHERE model = ? ORDER BY used ASC LIMIT ?)"),
      expire: this.db.prepare("DELETE FROM entries WHERE expires <= ?"),
    };
    for (const r of this.db.prepare("SELECT model, COUNT(*) AS n FROM entries GROUP BY model").all() as Array<{ model: string; n: number }>) this.counts.set(r.model, r.n);
    this.timer = setInterval(() => this.flush(), flushMs);
    this.timer.unref();
  }

  get(hash: string, now: number): CacheEntry | undefined {
    const r = this.q.get.get(hash) as { body: string; created: number; expires: number; request_id: string; key_id: string } | undefined;
    if (!r) return undefined;
    if (r.expires <= now) {
      this.q.del.run(hash);
      return undefined;
    }
    this.touched.set(hash, now);
    return { body: JSON.parse(r.body), requestId: r.request_id, createdAt: r.created, expiresAt: r.expires, bytes: r.body.length, keyId: r.key_id };
  }

  touch(hash: string, _model: string, now: number): void {
    this.touched.set(hash, now);
  }

  put(hash: string, entry: CacheEntry, meta: EntryMeta, now: number, text?: string): void {
    const body = text ?? JSON.stringify(entry.body);
    this.q.put.run(hash, meta.model, meta.scope, meta.keyId, entry.createdAt, now + meta.ttlMs, now, body.length, entry.requestId, body);
    const n = (this.counts.get(meta.model) ?? 0) + 1;
    this.counts.set(meta.model, n);
    if (++this.puts % 256 === 0) this.q.expire.run(now);
    if (n <= meta.maxEntries) return;
    // counted high on replaced entries: count again before evicting
    const real = (this.q.count.get(meta.model) as { n: number }).n;
    if (real > meta.maxEntries) this.q.evict.run(meta.model, real - meta.maxEntries);
    this.counts.set(meta.model, Math.min(real, meta.maxEntries));
  }

  /** Write the last-use times gathered since the previous flush (the LRU order). */
  private flush(): void {
    if (this.touched.size === 0 || !this.db.open) return;
    const t = this.touched;
    this.touched = new Map();
    this.db.transaction(() => {
      for (const [h, used] of t) this.q.touch.run(used, h);
    })();
  }

  async purge(f: PurgeFilter): Promise<number> {
    const where: string[] = [];
    const args: string[] = [];
    if (f.model) (where.push("model = ?"), args.push(f.model));
    if (f.keyId) (where.push("key_id = ?"), args.push(f.keyId));
    const n = this.db.prepare(`DELETE FROM entries${where.length ? ` WHERE ${where.join(" AND ")}` : ""}`).run(...args).changes;
    this.counts.clear();
    for (const r of this.db.prepare("SELECT model, COUNT(*) AS n FROM entries GROUP BY model").all() as Array<{ model: string; n: number }>) this.counts.set(r.model, r.n);
    return n;
  }

  async stats(): Promise<StoreStats> {
    const r = this.db.prepare("SELECT COUNT(*) AS n, COALESCE(SUM(bytes), 0) AS b FROM entries WHERE expires > ?").get(Date.now()) as { n: number; b: number };
    return { entries: r.n, bytes: r.b };
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.flush();
    this.db.close();
  }
}
