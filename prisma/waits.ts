// A bounded wait, shared by what stops within a grace period: the store's closers
// (prisma/checkpointer.ts, engines/store/pg-pool.ts), the upstream pools (engines/providers/http.ts)
// and the streams in flight (api/stream-shutdown.ts). Here, in the lowest layer, so all can use it.

/** Wait for `p` at most `ms` (the timer never keeps the process alive); true when it settled. */
export function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const t = setTimeout(() => resolve(false), ms);
    t.unref();
    const done = () => (clearTimeout(t), resolve(true));
    void p.then(done, done);
  });
}
