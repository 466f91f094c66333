// The response cache (docs/cache.md): exact-match answers of chat, completions, Responses,
// Messages, the Ollama routes and embeddings, declared per Provider model. The gateway pipeline
// probes it after the gate admitted a request (so a hit is still judged by key, policy and
// limits), replays a hit as the events the protocol renders, and stores a miss once its answer
// is complete. The store is SQLite in embedded mode and Redis in shared mode; a store that fails
// answers a miss. In front of the store a small in-memory tier (hot.ts) answers repeated requests
// with the entry's objects as they are: no digest, store read or parse on the hot path.
import path from "node:path";
import type { ChatEvent, ChatRequest, EmbeddingRequest } from "../chat/types";
import { isSyncEvents, type SyncEvents } from "../chat/collect";
import { chatKeyText, digestOf, embedKeyText, scopeOf, type ScopeHolder } from "./key";
import { HotCache } from "./hot";
import { minus, plus, zero, type CacheCounters, type CounterSet } from "./counters";
import { CACHE_DEFAULTS, type CacheDirectives, type CacheEntry, type CacheSettings, type CacheState, type CacheStore, type CachedBody, type EntryMeta, type PurgeFilter, type StoreStats } from "./types";
import { SqliteCacheStore } from "./sqlite";
import type { ProviderModelCache } from "../../schemas/kinds/provider";

export type { CacheDirectives, CacheSettings, CacheState, CacheEntry } from "./types";

/** What a probe found: a hit's entry, or where a miss's answer goes once complete. */
export interface Probe {
  state: CacheState;
  entry?: CacheEntry;
  settings?: CacheSettings;
  /** the key text (the in-memory tier's key) and its digest (the store's) */
  text?: string;
  hash?: string;
  meta?: EntryMeta;
  requestId?: string;
}

export type { CacheCounters } from "./counters";

export interface CacheStats extends CacheCounters, StoreStats {
  mode: "sqlite" | "redis";
  models: Record<string, CacheCounters>;
}

const BYPASS: Probe = { state: "bypass" };
/** how often a replica adds its counts to the cluster's (shared mode) */
const COUNTERS_MS = 1000;
const resolved = new WeakMap<ProviderModelCache, CacheSettings | undefined>();

/** A model's declaration with its defaults; undefined when the model is not cached. */
export function cacheSettings(decl: ProviderModelCache | undefined): CacheSettings | undefined {
  if (!decl) return undefined;
  if (resolved.has(decl)) return resolved.get(decl);
  const s = decl.enabled === false ? undefined : { ...CACHE_DEFAULTS, ...withoutEnabled(decl) };
  resolved.set(decl, s);
  return s;
}

function withoutEnabled(d: ProviderModelCache): Partial<CacheSettings> {
  const { enabled: _, ...rest } = d;
  return rest;
}

export class ResponseCache {
  private readonly total: CacheCounters = zero();
  /** shared mode: the counters as last added to Redis, and the cluster's totals read back */
  private flushed: CounterSet = { ...zero(), models: {} };
  private cluster?: CounterSet;
  private flushing?: Promise<void>;
  private timer?: NodeJS.Timeout;
  private readonly byModel = new Map<string, CacheCounters>();

  private opened?: CacheStore;
  private openFailed = false;
  private readonly hot = new HotCache();

  /** `open` makes the store on first use: a server whose models declare no cache opens no file
   * and no Redis connection for it. */
  constructor(
    private readonly open: () => CacheStore,
    private readonly warn: (m: string, extra?: Record<string, unknown>) => void = () => {},
  ) {}

  get store(): CacheStore {
    if (!this.opened) {
      this.opened = this.open();
      this.opened.onPurge?.((f) => this.hot.purge(f));
      if (this.opened.addCounters) {
        this.timer = setInterval(() => void this.flushCounters(), COUNTERS_MS);
        this.timer.unref();
      }
    }
    return this.opened;
  }

  /** The store, or undefined when it cannot be opened (a damaged cache.sqlite, a data dir that
   * cannot be written): a store that fails answers a miss, never an error (docs/cache.md). Opening
   * is tried again on the next request; the failure is logged once until it opens. */
  private usable(): CacheStore | undefined {
    try {
      const s = this.store;
      this.openFailed = false;
      return s;
    } catch (e) {
      if (!this.openFailed) this.warn("cache: the store could not be opened; requests are answered as cache misses", { err: String((e as Error)?.message ?? e) });
      this.openFailed = true;
      return undefined;
    }
  }

  /** `outputCap`: see chatKeyText (the caller's per_request_max when the request sets no max_tokens) */
  probeChat(decl: ProviderModelCache | undefined, d: CacheDirectives | undefined, key: ScopeHolder | null, req: ChatRequest, requestId: string, now: number, outputCap?: number): Probe | Promise<Probe> | undefined {
    const s = cacheSettings(decl);
    if (!s) return undefined;
    return this.probe(s, d, key, req.model, (scope) => chatKeyText(req, req.model, scope, outputCap), "chat", requestId, now);
  }

  probeEmbed(decl: ProviderModelCache | undefined, d: CacheDirectives | undefined, key: ScopeHolder | null, req: EmbeddingRequest, requestId: string, now: number): Probe | Promise<Probe> | undefined {
    const s = cacheSettings(decl);
    if (!s) return undefined;
    return this.probe(s, d, key, req.model, (scope) => embedKeyText(req, req.model, scope), "embed", requestId, now);
  }

  private probe(s: CacheSettings, d: CacheDirectives | undefined, key: ScopeHolder | null, model: string, textOf: (scope: string) => string, kind: CachedBody["kind"], requestId: string, now: number): Probe | Promise<Probe> {
    if (d?.noStore) {
      this.count(model).bypassed++;
      this.total.bypassed++;
      return BYPASS;
    }
    const scope = scopeOf(s.scope, key);
    const text = textOf(scope);
    const meta: EntryMeta = { model, scope, keyId: key?.id ?? "", ttlMs: s.ttlSeconds * 1000, maxEntries: s.maxEntries };
    const store = this.usable();
    // no store: a miss with nowhere to keep its answer (no hash: save() stores nothing)
    if (!store) return this.missed({ state: "miss", settings: s, requestId, meta });
    if (!d?.noCache && store.ready?.() !== false) {
      const h = this.hot.get(text, now);
      if (h) {
        this.store.touch(h.hash, model, now);
        return this.judge(h.entry, { state: "miss", settings: s, text, hash: h.hash, requestId, meta }, d, kind, now);
      }
    }
    const miss: Probe = { state: "miss", settings: s, text, hash: digestOf(text), requestId, meta };
    if (d?.noCache) return this.missed(miss);
    let got: ReturnType<CacheStore["get"]>;
    try {
      got = this.store.get(miss.hash!, now);
    } catch (e) {
      this.warn("cache: lookup failed; answered as a miss", { err: String((e as Error)?.message ?? e) });
      return this.missed(miss);
    }
    if (got instanceof Promise) return got.then((e) => this.judge(this.warm(e, miss), miss, d, kind, now), () => this.missed(miss));
    return this.judge(this.warm(got, miss), miss, d, kind, now);
  }

  /** An entry read from the store joins the in-memory tier, filed under the key that stored it
   * (not the reading key: another key of a team/organization scope), so purge --key drops it. */
  private warm(e: CacheEntry | undefined, p: Probe): CacheEntry | undefined {
    if (e) this.hot.set(p.text!, { entry: e, hash: p.hash!, model: p.meta!.model, keyId: e.keyId ?? p.meta!.keyId, expires: e.expiresAt ?? e.createdAt + p.meta!.ttlMs, bytes: p.text!.length + (e.bytes ?? 0) }, p.meta!.maxEntries);
    return e;
  }

  private judge(e: CacheEntry | undefined, miss: Probe, d: CacheDirectives | undefined, kind: CachedBody["kind"], now: number): Probe {
    if (!e || e.body.kind !== kind) return this.missed(miss);
    // the model's current ttlSeconds bounds the age too: an entry keeps the expiry it was stored
    // with, so a TTL shortened since (the Provider re-applied) would otherwise go on answering
    if (now - e.createdAt >= miss.meta!.ttlMs) return this.missed(miss);
    if (d?.maxAgeSeconds !== undefined && now - e.createdAt > d.maxAgeSeconds * 1000) return this.missed(miss);
    this.count(miss.meta!.model).hits++;
    this.total.hits++;
    miss.state = "hit"; // each probe is its own object: turned into the hit in place
    miss.entry = e;
    return miss;
  }

  private missed(p: Probe): Probe {
    this.count(p.meta!.model).misses++;
    this.total.misses++;
    return p;
  }

  private count(model: string): CacheCounters {
    let c = this.byModel.get(model);
    if (!c) this.byModel.set(model, (c = { hits: 0, misses: 0, bypassed: 0, savedUsdMicros: 0 }));
    return c;
  }

  /** A hit spared the upstream this much (USD micros, the price the miss would have had). */
  saved(model: string, usdMicros: number): void {
    this.count(model).savedUsdMicros += usdMicros;
    this.total.savedUsdMicros += usdMicros;
  }

  /** Pass a miss's events through and store them once the answer is complete (a `done` event
   * and no failure); an answer cut short or failed is never stored. Keeps a synchronous view. */
  record(events: AsyncIterable<ChatEvent>, p: Probe, now: () => number): AsyncIterable<ChatEvent> {
    if (p.state !== "miss") return events;
    const seen: ChatEvent[] = [];
    const complete = () => {
      if (seen.length && seen[seen.length - 1].type === "done") this.save(p, { kind: "chat", events: seen }, now());
    };
    if (isSyncEvents(events)) {
      const tee: SyncEvents = { sync: teeSync(events.sync, seen, complete), [Symbol.asyncIterator]: () => teeAsync(events, seen, complete) };
      return tee;
    }
    return { [Symbol.asyncIterator]: () => teeAsync(events, seen, complete) };
  }

  /** Store a complete answer (an embedding's, or a chat answer's events). */
  save(p: Probe, body: CachedBody, now: number): void {
    if (p.state !== "miss" || !p.hash || !p.meta) return;
    try {
      const entry: CacheEntry = { body, requestId: p.requestId ?? "", createdAt: now };
      const text = JSON.stringify(body);
      this.hot.set(p.text!, { entry, hash: p.hash, model: p.meta.model, keyId: p.meta.keyId, expires: now + p.meta.ttlMs, bytes: p.text!.length + text.length }, p.meta.maxEntries);
      const r = this.store.put(p.hash, entry, p.meta, now, text);
      if (r instanceof Promise) r.catch((e) => this.warn("cache: an answer could not be stored", { err: String(e?.message ?? e) }));
    } catch (e) {
      this.warn("cache: an answer could not be stored", { err: String((e as Error)?.message ?? e) });
    }
  }

  /** This replica's counts since its start (its /metrics). */
  counters(): CounterSet {
    return { ...this.total, models: Object.fromEntries([...this.byModel].map(([m, c]) => [m, { ...c }])) };
  }

  /** The whole cache's counts: in shared mode every replica's (as last read from Redis, with what
   * this replica counted since), else this replica's. */
  totals(): CounterSet {
    const own = this.counters();
    return this.cluster ? plus(this.cluster, minus(own, this.flushed)) : own;
  }

  /** Add what this replica counted since the last flush to the cluster's counts (shared mode).
   * Redis away: the counts wait for the next flush. */
  private flushCounters(): Promise<void> {
    const add = this.opened?.addCounters?.bind(this.opened);
    if (!add) return Promise.resolve();
    return (this.flushing ??= (async () => {
      const now = this.counters();
      try {
        this.cluster = await add(minus(now, this.flushed));
        this.flushed = now;
      } catch {
        // the store reported the outage; these counts are added at the next flush
      } finally {
        this.flushing = undefined;
      }
    })());
  }

  async stats(): Promise<CacheStats> {
    let st: StoreStats = { entries: 0, bytes: 0 };
    const store = this.usable(); // a store that cannot be opened shows as empty (the counts still count)
    try {
      if (store) st = await store.stats();
    } catch (e) {
      this.warn("cache: the store could not be read", { err: String((e as Error)?.message ?? e) });
    }
    await this.flushCounters();
    return { mode: store?.mode ?? "sqlite", ...st, ...this.totals() };
  }

  purge(f: PurgeFilter): Promise<number> {
    this.hot.purge(f);
    return this.store.purge(f);
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flushCounters();
    await this.opened?.close();
  }
}

function* teeSync(src: Iterable<ChatEvent>, seen: ChatEvent[], complete: () => void): Generator<ChatEvent> {
  for (const ev of src) {
    seen.push(ev);
    yield ev;
  }
  complete();
}

async function* teeAsync(src: AsyncIterable<ChatEvent>, seen: ChatEvent[], complete: () => void): AsyncGenerator<ChatEvent> {
  for await (const ev of src) {
    seen.push(ev);
    yield ev;
  }
  complete();
}

/** The embedded store in the data dir, or the shared one when SVC_REDIS_URL is set. */
export async function openResponseCache(home: string, env: NodeJS.ProcessEnv, warn: (m: string, extra?: Record<string, unknown>) => void): Promise<ResponseCache> {
  const url = env.SVC_REDIS_URL?.trim();
  // the Redis client is loaded in shared mode only: an embedded server never loads ioredis
  const { RedisCacheStore } = url ? await import("./redis") : { RedisCacheStore: undefined };
  const cache = new ResponseCache(() => (url && RedisCacheStore ? new RedisCacheStore(url, env.SVC_REDIS_PREFIX?.trim() || "svc:", warn) : new SqliteCacheStore(path.join(home, "cache.sqlite"))), warn);
  if (url) void cache.store; // connect now: a replica's first requests find Redis ready
  return cache;
}
