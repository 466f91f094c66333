// Rate state per key (limits/rate.ts windows): made on first use, restored from the snapshot
// saved before a restart and from the write-ahead admissions a crash left after that snapshot,
// checked before any slot is taken, and handed to persist.ts as snapshots of changed keys.
import type { KeyEntry } from "../keys";
import { LimitRefusal } from "./refusal";
import { type RateSnapshot, type RateState, SlidingWindow, TokenBucket, pairsOk, parseSnapshot, snapshotOf } from "./rate";
import type { EffectiveLimits } from "./usage";
import type { RateState as Rate } from "../../errors";

const MINUTE = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;

export class KeyRates {
  private rate = new Map<string, RateState>();
  /** keys whose rate state changed since the last flush (or was forgotten) */
  private dirty = new Set<string>();
  /** rate state loaded at start, applied when the key is next seen */
  private saved = new Map<string, RateSnapshot>();
  /** admissions recovered from write-ahead rows, replayed when the key is next seen */
  replay = new Map<string, number[]>();

  constructor(private readonly limitsOf: (k: KeyEntry) => EffectiveLimits) {}

  loadSaved(rows: Array<{ keyId: string; state: string }>) {
    for (const r of rows) {
      const snap = parseSnapshot(r.state);
      if (snap) this.saved.set(r.keyId, snap);
    }
  }

  /** The key's rate state when a slot is free; throws a 429 LimitRefusal when none is. */
  check(k: KeyEntry, lim: EffectiveLimits, now: number): RateState | null {
    const st = this.state(k, lim, now);
    if (st) {
      let wait = 0;
      let which = "";
      let limit = "";
      if (st.bucket) {
        const w = st.bucket.waitMs();
        if (w > 0) {
          wait = w;
          limit = `per_minute=${lim.perMinute}`;
          which = lim.burst !== undefined && lim.burst !== lim.perMinute ? `${limit} (burst=${lim.burst})` : limit;
        }
      }
      if (st.hour && !which) {
        const w = st.hour.waitMs(now);
        if (w > 0) [wait, which, limit] = [w, `per_hour=${lim.perHour}`, `per_hour=${lim.perHour}`];
      }
      if (st.day && !which) {
        const w = st.day.waitMs(now);
        if (w > 0) [wait, which, limit] = [w, `per_day=${lim.perDay}`, `per_day=${lim.perDay}`];
      }
      if (which) {
        const retry = Math.max(1, Math.ceil(wait / 1000));
        throw new LimitRefusal("rate_limit_exceeded", limit, `rate limit ${which} exceeded; retry after ${retry}s`, this.window(k, now), retry);
      }
    }

    return st;
  }

  consume(id: string, st: RateState, now: number) {
    if (st.bucket) st.bucket.tokens -= 1;
    st.hour?.add(now);
    st.day?.add(now);
    this.dirty.add(id);
  }

  /** The key's rate state, made (and restored from a snapshot or replayed admissions) on first use. */
  state(k: KeyEntry, lim: EffectiveLimits, now: number): RateState | null {
    if (lim.perMinute === undefined && lim.perHour === undefined && lim.perDay === undefined) {
      return null;
    }
    let st = this.rate.get(k.id);
    const saved = st ? undefined : this.saved.get(k.id);
    const replay = st ? undefined : this.replay.get(k.id);
    if (!st) {
      st = {};
      this.rate.set(k.id, st);
    }
    if (lim.perMinute !== undefined) {
      const cap = lim.burst ?? lim.perMinute;
      const perMs = lim.perMinute / MINUTE;
      if (!st.bucket) st.bucket = new TokenBucket(cap, perMs, now);
      else if (st.bucket.cap !== cap || st.bucket.perMs !== perMs) st.bucket.reshape(cap, perMs, now);
      st.bucket.refill(now);
    } else st.bucket = undefined;
    if (lim.perHour !== undefined) {
      if (!st.hour) st.hour = new SlidingWindow(lim.perHour, HOUR);
      else st.hour.resize(lim.perHour);
    } else st.hour = undefined;
    if (lim.perDay !== undefined) {
      if (!st.day) st.day = new SlidingWindow(lim.perDay, DAY);
      else st.day.resize(lim.perDay);
    } else st.day = undefined;
    if (saved) this.restore(k.id, st, saved, now);
    if (replay) {
      // admissions written ahead after the saved snapshot was taken (a crash lost them)
      this.replay.delete(k.id);
      for (const t of replay) {
        if (saved?.at !== undefined && t <= saved.at) continue;
        if (t > now) continue;
        if (st.bucket) st.bucket.tokens = Math.max(0, st.bucket.tokens - 1);
        if (st.hour && t > now - HOUR) st.hour.add(t);
        if (st.day && t > now - DAY) st.day.add(t);
      }
      this.dirty.add(k.id);
    }
    return st;
  }

  /** Apply a saved snapshot to freshly made rate state (limits may have changed meanwhile:
   * the bucket keeps what was used, windows keep at most their limit). */
  private restore(id: string, st: RateState, saved: RateSnapshot, now: number) {
    this.saved.delete(id);
    const b = saved.bucket;
    if (st.bucket && b && Number.isFinite(b.tokens) && Number.isFinite(b.last) && b.last <= now) {
      st.bucket.tokens = Math.max(0, Math.min(st.bucket.cap, b.tokens));
      st.bucket.last = b.last;
      st.bucket.refill(now);
    }
    if (st.hour && pairsOk(saved.hour)) st.hour.restore(saved.hour, now);
    if (st.day && pairsOk(saved.day)) st.day.restore(saved.day, now);
  }

  /** The key's rate window (the per_minute bucket, else the hour, else the day window), if any. */
  window(k: KeyEntry, now: number): Rate | undefined {
    const lim = this.limitsOf(k);
    const st = this.state(k, lim, now);
    if (!st) return undefined;
    if (st.bucket) {
      const b = st.bucket;
      return { limit: lim.perMinute!, remaining: Math.floor(b.tokens), resetSeconds: Math.ceil((b.cap - b.tokens) / b.perMs / 1000) };
    }
    const w = (st.hour ?? st.day)!;
    return { limit: w.limit, remaining: Math.max(0, w.limit - w.used(now)), resetSeconds: Math.ceil(w.resetMs(now) / 1000) };
  }

  changed(): boolean {
    return this.dirty.size > 0;
  }

  /** Snapshots of the keys changed since the last call (and the keys whose state is gone). */
  takeChanged(now: number): { rates: Array<[string, string]>; gone: string[]; ids: string[] } {
    const ids = [...this.dirty];
    this.dirty.clear();
    const rates: Array<[string, string]> = [];
    const gone: string[] = [];
    for (const id of ids) {
      const st = this.rate.get(id);
      if (st) rates.push([id, JSON.stringify(snapshotOf(st, now))]);
      else gone.push(id);
    }
    return { rates, gone, ids };
  }

  markChanged(ids: string[]) {
    for (const id of ids) this.dirty.add(id);
  }

  forget(id: string) {
    this.rate.delete(id);
    this.saved.delete(id);
    this.replay.delete(id);
    this.dirty.add(id); // the next flush deletes its saved state
  }
}
