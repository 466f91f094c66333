// Lease bookkeeping for the sequences of one context: a free sequence is leased at once (the one
// whose cached tokens share the longest prefix with the prompt, to reuse its evaluation); when
// all are busy, requests wait in a bounded FIFO queue.
import type { Token } from "node-llama-cpp";
import { abortError, inferenceError } from "./errors";

interface Waiter<S> {
  resolve: (slot: S) => void;
  reject: (err: unknown) => void;
  cleanup: () => void;
}

export class SlotQueue<S> {
  private free: S[];
  private waiters: Waiter<S>[] = [];

  constructor(
    slots: S[],
    private readonly maxQueue: number,
    /** how many prompt tokens a slot already holds; picks the best free slot */
    private readonly prefixScore: (slot: S, tokens: readonly Token[]) => number,
  ) {
    this.free = [...slots];
  }

  get queued(): number {
    return this.waiters.length;
  }

  get freeCount(): number {
    return this.free.length;
  }

  acquire(tokens: readonly Token[] | undefined, signal?: AbortSignal): Promise<S> {
    if (signal?.aborted) return Promise.reject(abortError(signal));
    if (this.free.length) return Promise.resolve(this.takeBest(tokens));
    if (this.waiters.length >= this.maxQueue) {
      return Promise.reject(inferenceError("capacity_exceeded", `all sequences busy and ${this.maxQueue} requests already queued`));
    }
    return new Promise<S>((resolve, reject) => {
      const onAbort = () => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(abortError(signal));
      };
      const waiter: Waiter<S> = { resolve, reject, cleanup: () => signal?.removeEventListener("abort", onAbort) };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  release(slot: S): void {
    const next = this.waiters.shift();
    if (next) {
      next.cleanup();
      next.resolve(slot); // FIFO hand-over: the slot stays leased
    } else {
      this.free.push(slot);
    }
  }

  rejectAll(err: unknown): void {
    for (const w of this.waiters.splice(0)) {
      w.cleanup();
      w.reject(err);
    }
  }

  private takeBest(tokens: readonly Token[] | undefined): S {
    // Ties (and no prompt) go to the least recently freed slot, so the caches of the most recent
    // conversations survive longest.
    let best = 0;
    if (tokens?.length) {
      let bestScore = -1;
      this.free.forEach((s, i) => {
        const score = this.prefixScore(s, tokens);
        if (score > bestScore) [best, bestScore] = [i, score];
      });
    }
    return this.free.splice(best, 1)[0];
  }
}
