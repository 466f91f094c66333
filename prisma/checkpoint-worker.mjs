// The store's background thread (started by prisma/checkpointer.ts): SQLite WAL checkpoints and
// audit retention batches, on a connection of its own. A checkpoint ends with an fsync; run
// inside a commit on the main thread it stalls the event loop for that long, so svc's
// connections turn automatic checkpoints off while this runs. A retention batch deletes rows
// with their index entries and roll-ups, milliseconds of work that would hold every request on
// the main thread. Each checkpoint is asked for first ({want}) and run on {checkpoint}; each job
// ({checkpoint} or {prune}, with its id) is answered once with that id. The main thread holds its
// direct writes until the answer, so a checkpoint copies the whole WAL and the next write starts
// the WAL over from its beginning (with writes landing during every checkpoint, it never would,
// and the WAL file would grow without bound), and a batch never makes the main thread wait for
// the write lock.
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

// one retention batch: roll the oldest rows before the cutoff up into UsageDaily, then delete
// them, in one transaction (statements from prisma/repos/retention-sqlite.ts)
const retention = workerData.retention
  ? (() => {
      const up = db.prepare(workerData.retention.rollUp);
      const del = db.prepare(workerData.retention.remove);
      return db.transaction((cutoff, batch) => {
        up.run(cutoff, batch);
        return del.run(cutoff, batch).changes;
      });
    })()
  : undefined;

let asked = false;
const timer = setInterval(() => {
  if (asked) return;
  asked = true;
  parentPort.postMessage({ want: true });
}, workerData.intervalMs);

parentPort.on("message", (m) => {
  if (m?.checkpoint) {
    const error = checkpoint();
    asked = false;
    parentPort.postMessage({ job: m.job, ...(error ? { error } : {}) });
    return;
  }
  if (m?.prune) {
    try {
      if (!retention) throw new Error("no retention statements");
      parentPort.postMessage({ job: m.job, pruned: retention(m.prune.cutoff, m.prune.batch) });
    } catch (e) {
      parentPort.postMessage({ job: m.job, error: String(e?.message ?? e) });
    }
    return;
  }
  if (m !== "stop") return;
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.close();
});
parentPort.postMessage({ ready: true });
