// The store's background thread (started by prisma/checkpointer.ts): SQLite WAL checkpoints, on
// a connection of its own. A checkpoint ends with an fsync; run inside a commit on the main
// thread it stalls the event loop for that long, so svc's connections turn automatic checkpoints
// off while this runs. Each checkpoint is asked for first ({want}) and run on {checkpoint, job};
// each job is answered once with its id. The main thread holds its direct writes until the
// answer, so a checkpoint copies the whole WAL and the next write starts the WAL over from its
// beginning (with writes landing during every checkpoint, it never would, and the WAL file would
// grow without bound). Audit retention batches run on a thread of their own
// (prisma/retention-worker.mjs), at idle priority, which takes the checkpoints while it prunes.
// Plain JavaScript: a worker thread starts without the TypeScript loader the server runs under.
import { parentPort, workerData } from "node:worker_threads";
import { checkpoint, openConnection } from "./worker-store.mjs";

const db = openConnection(workerData.file);

let asked = false;
const timer = setInterval(() => {
  if (asked) return;
  asked = true;
  parentPort.postMessage({ want: true });
}, workerData.intervalMs);

parentPort.on("message", (m) => {
  if (m?.checkpoint) {
    const error = checkpoint(db);
    parentPort.postMessage({ job: m.job, ...(error ? { error } : {}) });
    return;
  }
  // the checkpoint asked for is done, here or on the retention thread: ask again when due
  if (m?.checkpointed) {
    asked = false;
    return;
  }
  if (m !== "stop") return;
  clearInterval(timer);
  checkpoint(db);
  db.close();
  parentPort.close();
});
parentPort.postMessage({ ready: true });
