// A bounded wait, shared by the store's closers (prisma/checkpointer.ts, engines/store/pg-pool.ts).

/** Wait for `p` at most `ms` (the timer never keeps the process alive); true when it settled. */
export function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const t = setTimeout(() => resolve(false), ms);
    t.unref();
    const done = () => (clearTimeout(t), resolve(true));
    void p.then(done, done);
  });
}
