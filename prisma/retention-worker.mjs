// The thread audit retention batches run on (started by prisma/checkpointer.ts on the first
// batch), on a connection of its own: each batch rolls the oldest entries before the cutoff up
// into UsageDaily and deletes them, in one transaction (statements from
// prisma/repos/retention-sqlite.ts). While it prunes it also takes the WAL checkpoints, which
// copy what its batches wrote. Jobs ({prune, job} or {checkpoint, job}) are answered once with
// their id; the main thread holds its direct writes meanwhile, so it never waits for the write lock.
//
// Pruning is never urgent; requests are. So on Linux this thread runs as SCHED_IDLE (util-linux's
// chrt on the thread's own id): a request thread that becomes runnable preempts it at once. A
// nice value only shares the CPU out by weight: beside svc on 2 cores, batches at nice 19 still
// raised request latency (`npm run bench -- retention`). Where chrt is missing, nice 19. Either
// only lowers this thread's priority, which needs no privilege. When pruning stops, checkpoints go
// back to their own thread at normal priority: a busy machine must not starve them for long (the
// WAL would grow), and a batch starved past the main thread's wait ends the retention run.
// Plain JavaScript: a worker thread starts without the TypeScript loader the server runs under.
import { parentPort, workerData } from "node:worker_threads";
import { execFileSync } from "node:child_process";
import { readlinkSync } from "node:fs";
import os from "node:os";
import { checkpoint, openConnection } from "./worker-store.mjs";

function idlePriority() {
  try {
    os.setPriority(0, 19); // who 0: on Linux the calling thread, not the whole process
  } catch {}
  if (process.platform !== "linux") return;
  try {
    const tid = readlinkSync("/proc/thread-self").split("/").pop();
    execFileSync("chrt", ["--idle", "-p", "0", tid], { stdio: "ignore", timeout: 2000 });
  } catch {}
}
idlePriority();

const db = openConnection(workerData.file);
db.pragma("wal_autocheckpoint = 0"); // checkpoints are the other thread's
const up = db.prepare(workerData.retention.rollUp);
const del = db.prepare(workerData.retention.remove);
const batch = db.transaction((cutoff, size) => {
  up.run(cutoff, size);
  return del.run(cutoff, size).changes;
});

parentPort.on("message", (m) => {
  // while pruning, this thread takes the checkpoints too (prisma/checkpointer.ts)
  if (m?.checkpoint) {
    const error = checkpoint(db);
    parentPort.postMessage({ job: m.job, ...(error ? { error } : {}) });
    return;
  }
  if (m?.prune) {
    try {
      parentPort.postMessage({ job: m.job, pruned: batch(m.prune.cutoff, m.prune.batch) });
    } catch (e) {
      parentPort.postMessage({ job: m.job, error: String(e?.message ?? e) });
    }
    return;
  }
  if (m !== "stop") return;
  db.close();
  parentPort.close();
});
parentPort.postMessage({ ready: true });
