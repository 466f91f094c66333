// SQLite WAL checkpoints on a thread of their own (started by prisma/checkpointer.ts). A
// checkpoint ends with an fsync; run inside a commit on the main thread it stalls the event
// loop for that long, so svc's connections turn automatic checkpoints off while this runs.
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

const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.on("message", (m) => {
  if (m !== "stop") return;
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.close();
});
parentPort.postMessage({ ready: true });
