// What the store's background threads share (prisma/checkpoint-worker.mjs and
// prisma/retention-worker.mjs): a connection of their own to the file, set as svc's main one is,
// and the WAL checkpoint either may run. Plain JavaScript, as those threads are.
import Database from "better-sqlite3";

export function openConnection(file) {
  const db = new Database(file, { fileMustExist: true });
  db.pragma("busy_timeout = 5000");
  db.pragma("synchronous = NORMAL"); // as the main connection: commits without fsync in WAL mode
  return db;
}

/** PASSIVE: copy what can be copied without waiting for readers or writers. The error's text, if it failed. */
export function checkpoint(db) {
  try {
    db.pragma("wal_checkpoint(PASSIVE)");
    return undefined;
  } catch (e) {
    return String(e?.message ?? e);
  }
}
