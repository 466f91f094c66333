// Rate windows of one key (docs/architecture.md "The gate"; docs/gateway.md): per_minute as a token bucket holding `burst`
// (default per_minute) refilling per_minute/60 a second; per_hour / per_day as sliding windows
// (an exact ring of admission times up to 10,000 slots, above that 120 sub-buckets; a sub-bucket
// counts while its start is inside the window, so the admissions of the one leaving it, at most
// 1/120 of the window, no longer count; snapshots round toward the strict side). Snapshots are
// what persist.ts saves in the RateState table. engines/cluster/windows.lua counts the same way.

export class TokenBucket {
  tokens: number;
  last: number;
  constructor(public cap: number, public perMs: number, now: number) {
    this.tokens = cap;
    this.last = now;
  }
  refill(now: number) {
    if (now > this.last) {
      this.tokens = Math.min(this.cap, this.tokens + (now - this.last) * this.perMs);
      this.last = now;
    }
  }
  /** reshape in place: what was used stays used */
  reshape(cap: number, perMs: number, now: number) {
    this.refill(now);
    const used = this.cap - this.tokens;
    this.cap = cap;
    this.perMs = perMs;
    this.tokens = Math.max(0, Math.min(cap, cap - used));
  }
  /** ms until one token is available (0 when one is) */
  waitMs(): number {
    return this.tokens >= 1 ? 0 : (1 - this.tokens) / this.perMs;
  }
}

const EXACT_MAX = 10_000;
const SLICES = 120;

/** A sliding window of admissions: exact (ring of timestamps) or sliced for large limits. */
export class SlidingWindow {
  private ring: Float64Array | null = null;
  private head = 0; // next write (= oldest when full)
  private count = 0;
  private slices: Float64Array | null = null; // counts per slice
  private sliceStart: Float64Array | null = null; // start time of each slice's content
  constructor(public limit: number, readonly windowMs: number) {
    this.alloc(limit);
  }
  private alloc(limit: number) {
    if (limit <= EXACT_MAX) {
      this.ring = new Float64Array(limit);
      this.slices = this.sliceStart = null;
    } else {
      this.slices = new Float64Array(SLICES);
      this.sliceStart = new Float64Array(SLICES).fill(-Infinity);
      this.ring = null;
    }
    this.head = 0;
    this.count = 0;
  }
  resize(limit: number) {
    if (limit === this.limit) return;
    const keep: number[] = [];
    if (this.ring) {
      for (let i = 0; i < this.count; i++) keep.push(this.ring[(this.head - this.count + i + this.ring.length * 2) % this.ring.length]);
    }
    const slices = this.slices;
    const starts = this.sliceStart;
    this.limit = limit;
    this.alloc(limit);
    if (keep.length) for (const t of keep.slice(-limit)) this.add(t);
    else if (slices && starts) {
      // oldest slice first: an exact ring must be filled in time order (used() and waitMs() read
      // it newest to oldest); in slot order a slice that already left the window could land last
      // and hide the admissions still in it, so a lowered limit would admit past what was used
      const order = [...Array(SLICES).keys()].filter((i) => slices[i] > 0).sort((a, b) => starts[a] - starts[b]);
      for (const i of order) for (let j = 0; j < Math.min(slices[i], limit); j++) this.add(starts[i]);
    }
  }
  private sliceUsed(now: number): number {
    let n = 0;
    for (let i = 0; i < SLICES; i++) if (this.sliceStart![i] > now - this.windowMs) n += this.slices![i];
    return n;
  }
  used(now: number): number {
    if (this.ring) {
      // admissions still in the window
      let n = 0;
      for (let i = 0; i < this.count; i++) {
        const t = this.ring[(this.head - 1 - i + this.ring.length) % this.ring.length];
        if (t > now - this.windowMs) n++;
        else break;
      }
      return n;
    }
    return this.sliceUsed(now);
  }
  /** ms until a slot frees (0 when one is free) */
  waitMs(now: number): number {
    if (this.ring) {
      if (this.count < this.limit) return 0;
      const oldest = this.ring[this.head];
      return Math.max(0, oldest + this.windowMs - now);
    }
    if (this.sliceUsed(now) < this.limit) return 0;
    let oldest = Infinity;
    for (let i = 0; i < SLICES; i++) if (this.slices![i] > 0 && this.sliceStart![i] > now - this.windowMs) oldest = Math.min(oldest, this.sliceStart![i]);
    return Math.max(1, oldest + this.windowMs - now);
  }
  add(now: number) {
    if (this.ring) {
      this.ring[this.head] = now;
      this.head = (this.head + 1) % this.ring.length;
      if (this.count < this.limit) this.count++;
      return;
    }
    const width = this.windowMs / SLICES;
    const idx = Math.floor(now / width) % SLICES;
    const start = Math.floor(now / width) * width;
    if (this.sliceStart![idx] !== start) {
      this.sliceStart![idx] = start;
      this.slices![idx] = 0;
    }
    this.slices![idx]++;
  }
  /** The admissions still in the window as [time, count] pairs, oldest first, at most SLICES of
   * them: each admission is rounded up to the end of its slice (never past `now`), so a window
   * restored from it is never more lenient than the one saved. */
  snapshot(now: number): Array<[number, number]> {
    const width = this.windowMs / SLICES;
    const out: Array<[number, number]> = [];
    if (this.ring) {
      const ring = this.ring;
      for (let i = this.count - 1; i >= 0; i--) {
        const t = ring[(this.head - 1 - i + ring.length * 2) % ring.length];
        if (t <= now - this.windowMs) continue;
        const at = Math.min((Math.floor(t / width) + 1) * width - 1, now);
        const last = out[out.length - 1];
        if (last && last[0] === at) last[1]++;
        else out.push([at, 1]);
      }
      return out;
    }
    const order = [...Array(SLICES).keys()].sort((a, b) => this.sliceStart![a] - this.sliceStart![b]);
    for (const i of order) {
      if (this.sliceStart![i] > now - this.windowMs && this.slices![i] > 0) out.push([Math.min(this.sliceStart![i] + width - 1, now), this.slices![i]]);
    }
    return out;
  }

  restore(pairs: Array<[number, number]>, now: number): void {
    let room = this.limit;
    for (const [t, n] of pairs) {
      if (!(t > now - this.windowMs) || !(t <= now)) continue;
      for (let j = 0; j < n && room > 0; j++, room--) this.add(t);
    }
  }

  /** seconds until the window is empty again */
  resetMs(now: number): number {
    if (this.ring) {
      if (this.count === 0) return 0;
      const newest = this.ring[(this.head - 1 + this.ring.length) % this.ring.length];
      return Math.max(0, newest + this.windowMs - now);
    }
    return this.windowMs;
  }
}

export interface RateState {
  bucket?: TokenBucket;
  hour?: SlidingWindow;
  day?: SlidingWindow;
}

/** A key's rate state as stored in the RateState table (JSON). */
export interface RateSnapshot {
  /** token bucket: tokens left, at time `last` */
  bucket?: { tokens: number; last: number };
  hour?: Array<[number, number]>;
  day?: Array<[number, number]>;
  /** when the snapshot was taken (ms): write-ahead admissions after it are replayed at start */
  at?: number;
}

export function snapshotOf(st: RateState, now: number): RateSnapshot {
  const out: RateSnapshot = { at: now };
  if (st.bucket) {
    st.bucket.refill(now);
    out.bucket = { tokens: st.bucket.tokens, last: st.bucket.last };
  }
  if (st.hour) out.hour = st.hour.snapshot(now);
  if (st.day) out.day = st.day.snapshot(now);
  return out;
}

export function parseSnapshot(json: string): RateSnapshot | null {
  try {
    const v = JSON.parse(json);
    return v && typeof v === "object" ? (v as RateSnapshot) : null;
  } catch {
    return null;
  }
}

export const pairsOk = (x: unknown): x is Array<[number, number]> =>
  Array.isArray(x) && x.every((p) => Array.isArray(p) && Number.isFinite(p[0]) && Number.isInteger(p[1]) && p[1] > 0);

