// Background WAL checkpoints (prisma/checkpoint-worker.mjs). While the worker runs, the given
// connections have automatic checkpoints off; if it fails or exits, they are turned back on,
// so the WAL never grows without bound. While a checkpoint runs, writesPaused() hands the
// frequent writer (the audit log) a promise to wait on, so the checkpoint can finish the WAL.
import { Worker } from "node:worker_threads";

export interface Checkpointer {
  stop(): Promise<void>;
  /** A promise while a checkpoint runs (hold direct writes until it settles), else undefined. */
  writesPaused(): Promise<void> | undefined;
}

/** A checkpoint that does not report back within this long no longer holds writes. */
const MAX_PAUSE_MS = 2000;

/** `setAuto(pages)` sets wal_autocheckpoint on every connection that writes the file. */
export async function startCheckpointer(
  file: string,
  setAuto: (pages: number) => Promise<void>,
  warn: (msg: string) => void,
  intervalMs = 1000,
): Promise<Checkpointer | null> {
  let worker: Worker;
  try {
    worker = new Worker(new URL("./checkpoint-worker.mjs", import.meta.url), { workerData: { file, intervalMs } });
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
  let paused: Promise<void> | undefined;
  let resume: (() => void) | undefined;
  let safety: NodeJS.Timeout | undefined;
  const release = () => {
    if (safety) clearTimeout(safety);
    const r = resume;
    paused = resume = safety = undefined;
    r?.();
  };
  const fallBack = (why: string) => {
    release();
    if (stopping) return;
    warn(`background checkpoints stopped (${why}); back to automatic checkpoints`);
    void setAuto(1000).catch(() => undefined);
  };
  worker.on("message", (m) => {
    if (m?.error) warn(`checkpoint failed: ${m.error}`);
    if (m?.want && !stopping) {
      // Direct writes are synchronous, so none is in flight while this message is handled.
      paused = new Promise<void>((r) => (resume = r));
      safety = setTimeout(release, MAX_PAUSE_MS);
      safety.unref();
      worker.postMessage("go");
    }
    if (m?.done) release();
  });
  worker.on("error", (e) => fallBack(String(e?.message ?? e)));
  worker.on("exit", (code) => fallBack(`exit ${code}`));
  return {
    writesPaused: () => paused,
    async stop() {
      if (stopping) return;
      stopping = true;
      release();
      await setAuto(1000).catch(() => undefined);
      const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
      worker.ref(); // keep the process alive until the last checkpoint is done
      worker.postMessage("stop");
      const timeout = new Promise<void>((resolve) => setTimeout(resolve, 5000).unref());
      await Promise.race([exited, timeout]);
      await worker.terminate().catch(() => undefined);
    },
  };
}
