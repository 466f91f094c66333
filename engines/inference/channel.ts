// A push-to-pull bridge: node-llama-cpp reports tokens through callbacks, callers read an async
// iterator. Unbounded on purpose: a generation produces at most maxTokens events.
export class EventChannel<T> {
  private buf: T[] = [];
  private wake?: () => void;
  private ended = false;
  private error: unknown;
  private failed = false;

  push(v: T): void {
    this.buf.push(v);
    this.notify();
  }

  end(error?: unknown): void {
    if (this.ended) return;
    this.ended = true;
    if (error !== undefined) {
      this.failed = true;
      this.error = error;
    }
    this.notify();
  }

  private notify() {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for (;;) {
      if (this.buf.length) {
        const batch = this.buf;
        this.buf = [];
        for (const v of batch) yield v;
        continue;
      }
      if (this.ended) {
        if (this.failed) throw this.error;
        return;
      }
      await new Promise<void>((r) => (this.wake = r));
    }
  }
}
