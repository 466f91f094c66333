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
import Database from "better-sqlite3";

const db = new Database(workerData.file, { fileMustExist: true });
db.pragma("busy_timeout = 5000");
db.pragma("synchronous = NORMAL"); // as the main connection: commits without fsync in WAL mode

/** PASSIVE: copy what can be copied without waiting for readers or writers. */
function checkpoint() {
  try {
    db.pragma("wal_checkpoint(PASSIVE)");
    return undefined;
  } catch (e) {
    return String(e?.message ?? e);
  }
}

let asked = false;
const timer = setInterval(() => {
  if (asked) return;
  asked = true;
  parentPort.postMessage({ want: true });
}, workerData.intervalMs);

parentPort.on("message", (m) => {
  if (m?.checkpoint) {
    const error = checkpoint();
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
  checkpoint();
  db.close();
  parentPort.close();
});
parentPort.postMessage({ ready: true });
