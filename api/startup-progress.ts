// Start-up progress for a person watching `svc serve` (stderr, plain lines "svc: …"), so a first
// start that migrates, generates the model and applies the quickstart never sits silent.
// A step known to do work is announced when it begins; any other step is announced only once it
// has run for a second. A step that took a second or more reports its duration when it ends.
export type Progress = (line: string) => void;

export interface StartupSteps {
  /** Run one step. `announce`: say so at once (the step does work known to be slow). */
  run<T>(label: string, fn: () => Promise<T> | T, opts?: { announce?: boolean }): Promise<T>;
  /** A one-off line. */
  say(line: string): void;
}

const SLOW_MS = 1000;

export function startupSteps(progress: Progress | undefined, slowMs = SLOW_MS): StartupSteps {
  if (!progress) return { run: async (_label, fn) => fn(), say: () => undefined };
  const say = (line: string) => progress(`svc: ${line}`);
  return {
    say,
    async run(label, fn, opts = {}) {
      const started = performance.now();
      let announced = opts.announce === true;
      if (announced) say(`${label}…`);
      const timer = announced
        ? undefined
        : setTimeout(() => {
            announced = true;
            say(`${label}…`);
          }, slowMs);
      timer?.unref();
      try {
        return await fn();
      } finally {
        clearTimeout(timer);
        const ms = performance.now() - started;
        if (ms >= slowMs) say(`${label}: done in ${(ms / 1000).toFixed(1)} s`);
      }
    },
  };
}
