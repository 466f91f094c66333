// The store's background threads: WAL checkpoints (prisma/checkpoint-worker.mjs) and audit
// retention batches (prisma/retention-worker.mjs, started on the first batch, at idle priority;
// while it prunes it takes the checkpoints too), each job run on the thread's own connection
// while this thread holds its direct writes. While the checkpoint thread runs, the given
// connections have automatic checkpoints off; if it fails or exits, they are turned back on, so
// the WAL never grows without bound. While a job runs, writesPaused() hands the direct writers
// (the audit log, the limits flush) a promise to wait on: a checkpoint can then finish the WAL,
// and a retention batch never makes this thread wait for the write lock. Jobs run one at a time;
// requests never wait for them.
import { Worker } from "node:worker_threads";
import { within } from "./waits";

export interface Checkpointer {
  stop(): Promise<void>;
  /** A promise while a job runs (hold direct writes until it settles), else undefined. */
  writesPaused(): Promise<void> | undefined;
  /** Run one retention batch on the retention thread (the statements given at start, with
   * `cutoff` and `batch`); how many audit entries it deleted. Rejects when that thread cannot. */
  prune(cutoff: string, batch: number): Promise<number>;
  /** false once the checkpoint thread stopped or failed */
  running(): boolean;
  /** false once either thread stopped or failed (batches fall back to the caller's thread) */
  canPrune(): boolean;
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

/** Checkpoints go to the retention thread while its last batch ended less than this long ago. */
const PRUNING_MS = 1000;

/** Whether a worker said it is ready (its first message) rather than failing or exiting. */
function started(w: Worker): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    w.once("message", (m) => resolve(m?.ready === true));
    w.once("error", () => resolve(false));
    w.once("exit", () => resolve(false));
  });
}

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
  if (!(await started(worker))) {
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
  const settle = (m: { job?: number } & Answer) => {
    if (m?.job !== undefined && answer?.id === m.job) answer.settle(m);
  };
  worker.on("message", (m: { want?: boolean; job?: number } & Answer) => {
    if (m?.want && !stopping) {
      // Direct writes are synchronous, so none is in flight while a job starts. While audit
      // retention runs, its thread (idle priority) takes the checkpoints too: they copy what its
      // batches wrote, and at normal priority they slowed requests as much as the batches had.
      // A starved retention thread ends the run (its batch goes unanswered), and the checkpoints
      // come back here.
      const target = prunerWorker && !prunerGone && performance.now() - lastPrune < PRUNING_MS ? prunerWorker : worker;
      void hold((job) => target.postMessage({ checkpoint: true, job }))
        .then((r) => r.error && warn(`checkpoint failed: ${r.error}`))
        .finally(() => !gone && worker.postMessage({ checkpointed: true }));
      return;
    }
    settle(m);
  });
  worker.on("error", (e) => fallBack(String(e?.message ?? e)));
  worker.on("exit", (code) => fallBack(`exit ${code}`));

  // the retention thread, started on the first batch; once it fails, batches fall back
  let pruner: Promise<Worker | null> | undefined;
  let prunerWorker: Worker | undefined;
  let prunerGone = false;
  let lastPrune = -Infinity;
  const startPruner = async (): Promise<Worker | null> => {
    const w = new Worker(new URL("./retention-worker.mjs", import.meta.url), { workerData: { file, retention: opts.retention } });
    w.unref();
    const ok = await started(w);
    const lost = (why: string) => {
      prunerGone = true;
      answer?.settle({ error: why });
    };
    if (!ok) {
      lost("the retention thread did not start");
      await w.terminate().catch(() => undefined);
      return null;
    }
    w.on("message", settle);
    w.on("error", (e) => lost(String(e?.message ?? e)));
    w.on("exit", (code) => lost(`exit ${code}`));
    return (prunerWorker = w);
  };

  return {
    writesPaused: () => paused,
    running: () => !gone && !stopping,
    canPrune: () => !gone && !stopping && !prunerGone,
    async prune(cutoff, batch) {
      if (!opts.retention) throw new Error("the background thread was started without retention statements");
      if (prunerGone) throw new Error("audit retention batch failed: the retention thread stopped");
      // writes are held from the call on (the thread starts with the first batch)
      const post = (job: number) =>
        void (pruner ??= startPruner()).then((w) => {
          if (w && !prunerGone) w.postMessage({ prune: { cutoff, batch }, job });
          else if (answer?.id === job) answer.settle({ error: "the retention thread stopped" });
        });
      const r = await hold(post).finally(() => (lastPrune = performance.now()));
      if (r.error !== undefined) throw new Error(`audit retention batch failed on the retention thread: ${r.error}`);
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
      const w = await pruner;
      if (w && !prunerGone) {
        prunerGone = true;
        const done = new Promise<void>((resolve) => w.once("exit", () => resolve()));
        w.postMessage("stop"); // it closes its connection and exits
        await within(done, STOP_WAIT_MS);
        await within(w.terminate(), STOP_WAIT_MS);
      }
    },
  };
}
