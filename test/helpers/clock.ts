// An injected clock for tests that compare "today's" usage across steps: Date (and Date.now) in
// this test process run at the real pace, shifted so the run starts at 12:00 UTC of the current
// day, so no step can fall on the other side of a UTC midnight. In-process svc instances read
// the same clock; child processes keep the real one.
const RealDate = Date;

export function pinToMiddayUtc(): () => void {
  const real = RealDate.now();
  const offset = Math.floor(real / 86_400_000) * 86_400_000 + 43_200_000 - real;
  class ShiftedDate extends RealDate {
    constructor(...args: unknown[]) {
      if (args.length === 0) super(RealDate.now() + offset);
      else super(...(args as [string | number]));
    }
    static override now(): number {
      return RealDate.now() + offset;
    }
  }
  globalThis.Date = ShiftedDate as DateConstructor;
  return () => {
    globalThis.Date = RealDate;
  };
}
