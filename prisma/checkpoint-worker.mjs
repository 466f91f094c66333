// SQLite WAL checkpoints on a thread of their own (started by prisma/checkpointer.ts). A
// checkpoint ends with an fsync; run inside a commit on the main thread it stalls the event
// loop for that long, so svc's connections turn automatic checkpoints off while this runs.
// Each checkpoint is asked for first ({want}) and run on "go": the main thread holds its audit
// writes until {done}, so the checkpoint copies the whole WAL and the next write starts the
// WAL over from its beginning (with writes landing during every checkpoint, it never would,
// and the WAL file would grow without bound).
// Plain JavaScript: a worker thread starts without the TypeScript loader the server runs under.
import { parentPort, workerData } from "node:worker_threads";
import Database from "better-sqlite3";

const db = new Database(workerData.file, { fileMustExist: true });
db.pragma("busy_timeout = 5000");

/** PASSIVE: copy what can be copied without waiting for readers or writers. */
function checkpoint() {
  try {
    db.pragma("wal_checkpoint(PASSIVE)");
  } catch (e) {
    parentPort.postMessage({ error: String(e?.message ?? e) });
  }
}

let asked = false;
const timer = setInterval(() => {
  if (asked) return;
  asked = true;
  parentPort.postMessage({ want: true });
}, workerData.intervalMs);

parentPort.on("message", (m) => {
  if (m === "go") {
    checkpoint();
    asked = false;
    parentPort.postMessage({ done: true });
    return;
  }
  if (m !== "stop") return;
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.close();
});
parentPort.postMessage({ ready: true });
