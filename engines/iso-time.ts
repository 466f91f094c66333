// ISO-8601 text of a millisecond time, remembered for the last millisecond asked: under load many
// access lines and audit rows of one millisecond share it (toISOString is ~0.5-1 µs a call here).

let lastMs = Number.NaN;
let lastIso = "";

/** `new Date(ms).toISOString()`, "2026-11-23T23:24:10.941Z". */
export function isoAt(ms: number): string {
  if (ms !== lastMs) {
    lastIso = new Date(ms).toISOString();
    lastMs = ms;
  }
  return lastIso;
}

let lastDbMs = Number.NaN;
let lastDb = "";

/** The DateTime text the Prisma SQLite adapter stores: ISO with "+00:00" for "Z". */
export function dbIsoAt(ms: number): string {
  if (ms !== lastDbMs) {
    lastDb = isoAt(ms).slice(0, -1) + "+00:00";
    lastDbMs = ms;
  }
  return lastDb;
}
