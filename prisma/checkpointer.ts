// The store's background thread (prisma/checkpoint-worker.mjs): WAL checkpoints and audit
// retention batches, each run on the worker's own connection while this thread holds its direct
// writes. While the worker runs, the given connections have automatic checkpoints off; if it
// fails or exits, they are turned back on, so the WAL never grows without bound. While a job
// runs, writesPaused() hands the direct writers (the audit log, the limits flush) a promise to
// wait on: a checkpoint can then finish the WAL, and a retention batch never makes this thread
// wait for the write lock. Jobs run one at a time; requests never wait for them.
import { Worker } from "node:worker_threads";
import { within } from "./waits";

export interface Checkpointer {
  stop(): Promise<void>;
  /** A promise while a job runs (hold direct writes until it settles), else undefined. */
  writesPaused(): Promise<void> | undefined;
  /** Run one retention batch on the worker (the statements given at start, with `cutoff` and
   * `batch`); how many audit entries it deleted. Rejects when the worker cannot. */
  prune(cutoff: string, batch: number): Promise<number>;
  /** false once the worker stopped or failed (its jobs fall back to the caller's thread) */
  running(): boolean;
}

/** Statements of one retention batch (prisma/repos/retention-sqlite.ts): each takes (cutoff, batch). */
export interface RetentionStatements {
  rollUp: string;
  remove: string;
}

/** What the worker answers for a job. */
interface Answer {
  pruned?: number;
  error?: string;
}

/** A job that does not report back within this long no longer holds writes. */
const MAX_PAUSE_MS = 2000;

const STOP_WAIT_MS = 2000;

/** `setAuto(pages)` sets wal_autocheckpoint on every connection that writes the file. */
export async function startCheckpointer(
  file: string,
  setAuto: (pages: number) => Promise<void>,
  warn: (msg: string) => void,
  opts: { intervalMs?: number; retention?: RetentionStatements } = {},
): Promise<Checkpointer | null> {
  let worker: Worker;
  try {
    worker = new Worker(new URL("./checkpoint-worker.mjs", import.meta.url), { workerData: { file, intervalMs: opts.intervalMs ?? 1000, retention: opts.retention } });
  } catch (e) {
    warn(`background checkpoints unavailable: ${String((e as Error)?.message ?? e)}`);
    return null;
  }
  worker.unref(); // never keeps a process alive; stop() ends it in order
  const ready = await new Promise<boolean>((resolve) => {
    worker.once("message", (m) => resolve(m?.ready === true));
    worker.once("error", () => resolve(false));
    worker.once("exit", () => resolve(false));
  });
  if (!ready) {
    warn("background checkpoints unavailable: the worker did not start");
    await worker.terminate().catch(() => undefined);
    return null;
  }
  try {
    await setAuto(0);
  } catch (e) {
    warn(`background checkpoints unavailable: ${String((e as Error)?.message ?? e)}`);
    await worker.terminate().catch(() => undefined);
    return null;
  }
  let stopping = false;
  let gone = false;
  // the job holding direct writes, and the resolver of its answer (by job id: a late answer of a
  // job given up on never settles the next one)
  let paused: Promise<void> | undefined;
  let answer: { id: number; settle: (m: Answer) => void } | undefined;
  let seq = 0;

  /** Run a job on the worker once no other job holds writes; writes are held meanwhile (at most
   * MAX_PAUSE_MS: a job that does not answer by then no longer holds them). */
  const hold = async (post: (job: number) => void): Promise<Answer> => {
    while (paused) await paused;
    if (gone) return { error: "the store's background thread stopped" };
    let resume!: () => void;
    paused = new Promise<void>((r) => (resume = r));
    const id = ++seq;
    try {
      return await new Promise<Answer>((resolve) => {
        const safety = setTimeout(() => resolve({ error: `no answer within ${MAX_PAUSE_MS} ms` }), MAX_PAUSE_MS);
        safety.unref();
        answer = {
          id,
          settle: (m) => {
            clearTimeout(safety);
            resolve(m);
          },
        };
        post(id);
      });
    } finally {
      answer = undefined;
      paused = undefined;
      resume();
    }
  };
  const fallBack = (why: string) => {
    gone = true;
    answer?.settle({ error: why });
    if (stopping) return;
    warn(`background checkpoints stopped (${why}); back to automatic checkpoints`);
    void setAuto(1000).catch(() => undefined);
  };
  worker.on("message", (m: { want?: boolean; job?: number } & Answer) => {
    if (m?.want && !stopping) {
      // Direct writes are synchronous, so none is in flight while a job starts.
      void hold((job) => worker.postMessage({ checkpoint: true, job })).then((r) => r.error && warn(`checkpoint failed: ${r.error}`));
      return;
    }
    if (m?.job !== undefined && answer?.id === m.job) answer.settle(m);
  });
  worker.on("error", (e) => fallBack(String(e?.message ?? e)));
  worker.on("exit", (code) => fallBack(`exit ${code}`));
  return {
    writesPaused: () => paused,
    running: () => !gone && !stopping,
    async prune(cutoff, batch) {
      if (!opts.retention) throw new Error("the background thread was started without retention statements");
      const r = await hold((job) => worker.postMessage({ prune: { cutoff, batch }, job }));
      if (r.error !== undefined) throw new Error(`audit retention batch failed on the background thread: ${r.error}`);
      return r.pruned ?? 0;
    },
    async stop() {
      if (stopping) return;
      stopping = true;
      answer?.settle({ error: "stopping" });
      // every wait bounded: a stop never hangs on this thread
      await within(setAuto(1000), STOP_WAIT_MS);
      const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
      worker.ref(); // keep the process alive until the last checkpoint is done
      worker.postMessage("stop");
      await within(exited, 5000);
      await within(worker.terminate(), STOP_WAIT_MS);
    },
  };
}
