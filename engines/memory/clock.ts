// The memory engine's time source. Debounce and consolidation timers run on it, so tests drive
// time with a ManualClock (advance) instead of sleeping.

export interface TimerHandle {
  cancel(): void;
}

export interface Clock {
  now(): number;
  /** run fn after ms (real timers are unref'd: memory never keeps the process alive) */
  after(ms: number, fn: () => void): TimerHandle;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  after(ms, fn) {
    const t = setTimeout(fn, Math.min(Math.max(0, ms), 2 ** 31 - 1));
    t.unref();
    return { cancel: () => clearTimeout(t) };
  },
};

/** A clock that moves only when told: advance(ms) fires every timer that falls due, in order. */
export class ManualClock implements Clock {
  private t: number;
  private seq = 0;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  after(ms: number, fn: () => void): TimerHandle {
    const id = ++this.seq;
    this.timers.set(id, { at: this.t + Math.max(0, ms), fn });
    return { cancel: () => void this.timers.delete(id) };
  }

  /** timers not yet fired */
  get pending(): number {
    return this.timers.size;
  }

  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const e of this.timers) if (e[1].at <= end && (!next || e[1].at < next[1].at)) next = e;
      if (!next) break;
      this.timers.delete(next[0]);
      this.t = Math.max(this.t, next[1].at);
      next[1].fn();
    }
    this.t = end;
  }
}
