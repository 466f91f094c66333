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

/** A timestamp svc was given (any ISO 8601 offset), as UTC with "Z": "2030-01-01T02:00:00+02:00"
 * -> "2030-01-01T00:00:00Z" (milliseconds kept only when there are any). Unparseable text is
 * returned as it is, for the schema check to refuse with its own message. */
export function utcIso(text: string): string {
  const ms = Date.parse(text);
  if (Number.isNaN(ms)) return text;
  const iso = new Date(ms).toISOString();
  return iso.endsWith(".000Z") ? iso.slice(0, -5) + "Z" : iso;
}
