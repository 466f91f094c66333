// Background WAL checkpoints (prisma/checkpoint-worker.mjs). While the worker runs, the given
// connections have automatic checkpoints off; if it fails or exits, they are turned back on,
// so the WAL never grows without bound.
import { Worker } from "node:worker_threads";

export interface Checkpointer {
  stop(): Promise<void>;
}

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
  const fallBack = (why: string) => {
    if (stopping) return;
    warn(`background checkpoints stopped (${why}); back to automatic checkpoints`);
    void setAuto(1000).catch(() => undefined);
  };
  worker.on("message", (m) => m?.error && warn(`checkpoint failed: ${m.error}`));
  worker.on("error", (e) => fallBack(String(e?.message ?? e)));
  worker.on("exit", (code) => fallBack(`exit ${code}`));
  return {
    async stop() {
      if (stopping) return;
      stopping = true;
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
