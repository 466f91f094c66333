// A settable clock for a whole test process: Date (and Date.now) run at the real pace from the
// time last set. In-process svc instances read it (their clocks are Date.now); child processes
// keep the real one. Install before the server starts, set only forward.
const RealDate = Date;
let offset = 0;

export const realNow = (): number => RealDate.now();

export function setNow(ms: number): void {
  offset = ms - RealDate.now();
}

export function installClock(): () => void {
  class SetDate extends RealDate {
    constructor(...args: unknown[]) {
      if (args.length === 0) super(RealDate.now() + offset);
      else super(...(args as [string | number]));
    }
    static override now(): number {
      return RealDate.now() + offset;
    }
  }
  globalThis.Date = SetDate as DateConstructor;
  return () => {
    globalThis.Date = RealDate;
    offset = 0;
  };
}

/** For tests that compare "today's" usage across steps: the run starts at 12:00 UTC of the
 * current day, so no step can fall on the other side of a UTC midnight. */
export function pinToMiddayUtc(): () => void {
  const real = RealDate.now();
  const restore = installClock();
  setNow(Math.floor(real / 86_400_000) * 86_400_000 + 43_200_000);
  return restore;
}
