// The response cache's shapes (docs/cache.md): what a Provider model declares, what is stored,
// and the store interface the embedded (SQLite) and shared (Redis) stores implement.
import type { ChatEvent } from "../chat/types";
import type { CounterSet } from "./counters";

/** Who may be answered by an entry: the key that stored it, its team, its organization, or any
 * caller allowed the model. A key without a team (organization) falls back to its own scope. */
export type CacheScope = "key" | "team" | "organization" | "global";

/** Provider.spec.models[].cache, resolved with its defaults. */
export interface CacheSettings {
  ttlSeconds: number;
  scope: CacheScope;
  /** entries of this model kept; the least recently used beyond it are evicted */
  maxEntries: number;
  /** a hit is charged its price against budgets (default: free) */
  chargeHits: boolean;
}

export const CACHE_DEFAULTS: CacheSettings = { ttlSeconds: 3600, scope: "key", maxEntries: 10_000, chargeHits: false };

/** What a request asks of the cache (HTTP Cache-Control or metadata.cache, parsed in api/). */
export interface CacheDirectives {
  /** neither read nor write the cache */
  noStore?: boolean;
  /** do not answer from the cache; the fresh answer is still stored */
  noCache?: boolean;
  /** answer only from an entry at most this old */
  maxAgeSeconds?: number;
}

export type CacheState = "hit" | "miss" | "bypass";

/** A stored answer: a chat answer's events, or an embedding's vectors. */
export type CachedBody =
  | { kind: "chat"; events: ChatEvent[] }
  | { kind: "embed"; vectors: number[][]; promptTokens: number };

export interface CacheEntry {
  body: CachedBody;
  /** the request id of the call that was forwarded and stored */
  requestId: string;
  /** ms since epoch the answer was stored */
  createdAt: number;
  /** ms since epoch it expires, and the size of its stored text (as read from a store) */
  expiresAt?: number;
  bytes?: number;
  /** the key that stored it (as read from a store): the in-memory tier files it under that key,
   * so `purge --key` drops it whoever read it back (not the reading key of the scope) */
  keyId?: string;
}

/** Where the entry is filed: for eviction (model), purge (model, keyId) and the scope check. */
export interface EntryMeta {
  model: string;
  scope: string;
  keyId: string;
  ttlMs: number;
  maxEntries: number;
}

export interface PurgeFilter {
  model?: string;
  keyId?: string;
}

export interface StoreStats {
  entries: number;
  bytes: number;
}

/** The embedded and shared stores. A shared store's failure is a miss, never an error. */
export interface CacheStore {
  readonly mode: "sqlite" | "redis";
  get(hash: string, now: number): CacheEntry | undefined | Promise<CacheEntry | undefined>;
  /** `text`: the body already serialised (the cache serialises once for the store and its size) */
  put(hash: string, entry: CacheEntry, meta: EntryMeta, now: number, text?: string): void | Promise<void>;
  /** an answer served from the in-memory tier was used now (the store's least-recently-used order) */
  touch(hash: string, model: string, now: number): void;
  /** false while the in-memory tier must not answer (shared mode, Redis unreachable) */
  ready?(): boolean;
  /** shared mode: add this replica's counts since its last call; the cluster's totals */
  addCounters?(delta: CounterSet): Promise<CounterSet>;
  /** a purge made elsewhere (another replica): the in-memory tier drops what it removed */
  onPurge?(listener: (f: PurgeFilter) => void): void;
  purge(filter: PurgeFilter): Promise<number>;
  stats(): Promise<StoreStats>;
  close(): Promise<void>;
}
