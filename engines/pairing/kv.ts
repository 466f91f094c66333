// Where pairing keeps its short-lived state (challenges, pending requests, codes with their lockout
// counts, used invites in shared mode, secure sessions): in this process's memory for a single
// server, or in Redis when replicas share it (engines/cluster/pairing-kv.ts), so a pairing begun
// on one replica can be finished on another and a secure session served by any. Every entry
// expires by itself (TTL), as the state it holds does.

export interface PairKv {
  readonly shared: boolean;
  put(key: string, value: string, ttlMs: number): Promise<void>;
  get(key: string): Promise<string | null>;
  /** get and delete at once: a single-use value is taken by one caller only */
  take(key: string): Promise<string | null>;
  /** set unless present; true when this call set it */
  claim(key: string, value: string, ttlMs: number): Promise<boolean>;
  del(keys: string[]): Promise<void>;
  /** add 1 (from 0), keeping the TTL set on creation; the new value */
  incr(key: string, ttlMs: number): Promise<number>;
  /** keys under a prefix */
  keys(prefix: string): Promise<string[]>;
  /** raise a counter to `to` when `to` is above it; false (unchanged) otherwise */
  raise(key: string, to: number, ttlMs: number): Promise<boolean>;
}

/** The single-server store: a Map with expiry times. */
export class MemoryKv implements PairKv {
  readonly shared = false;
  private readonly m = new Map<string, { v: string; exp: number }>();
  constructor(private readonly now: () => number = Date.now) {}

  private live(key: string) {
    const e = this.m.get(key);
    if (e && e.exp <= this.now()) {
      this.m.delete(key);
      return undefined;
    }
    return e;
  }
  async put(key: string, value: string, ttlMs: number) {
    this.m.set(key, { v: value, exp: this.now() + ttlMs });
  }
  async get(key: string) {
    return this.live(key)?.v ?? null;
  }
  async take(key: string) {
    const e = this.live(key);
    this.m.delete(key);
    return e?.v ?? null;
  }
  async claim(key: string, value: string, ttlMs: number) {
    if (this.live(key)) return false;
    await this.put(key, value, ttlMs);
    return true;
  }
  async del(keys: string[]) {
    for (const k of keys) this.m.delete(k);
  }
  async incr(key: string, ttlMs: number) {
    const e = this.live(key);
    const n = Number(e?.v ?? 0) + 1;
    this.m.set(key, { v: String(n), exp: e?.exp ?? this.now() + ttlMs });
    return n;
  }
  async keys(prefix: string) {
    const out: string[] = [];
    for (const k of [...this.m.keys()]) if (k.startsWith(prefix) && this.live(k)) out.push(k);
    return out;
  }
  async raise(key: string, to: number, ttlMs: number) {
    const e = this.live(key);
    if (e && Number(e.v) >= to) return false;
    this.m.set(key, { v: String(to), exp: e?.exp ?? this.now() + ttlMs });
    return true;
  }
}

/** Set by the cluster wiring (engines/cluster) for a store whose replicas share Redis. */
export const sharedPairingKv = new WeakMap<object, PairKv>();
