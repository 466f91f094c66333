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
    // its own slot, not isoAt's: audit rows (request start) and access lines (now) ask for
    // different milliseconds in turn, and one shared slot would miss on every call
    lastDb = new Date(ms).toISOString().slice(0, -1) + "+00:00";
    lastDbMs = ms;
  }
  return lastDb;
}

const NO_OFFSET = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)$/;
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;

/** The instant of a timestamp svc was given, in ms (NaN when it is none). A date and time with no
 * offset is UTC, never the server's own zone (JavaScript would read it as local time); a bare
 * date is UTC midnight. */
export function utcMs(text: string): number {
  const t = text.trim();
  const m = NO_OFFSET.exec(t);
  return Date.parse(m ? `${m[1]}T${m[2]}Z` : t);
}

/** A timestamp svc was given (any ISO 8601 offset, or none: UTC), as UTC with "Z":
 * "2030-01-01T02:00:00+02:00" -> "2030-01-01T00:00:00Z" (milliseconds kept only when there are
 * any). Unparseable text is returned as it is, for the schema check to refuse with its own message. */
export function utcIso(text: string): string {
  const ms = utcMs(text);
  if (Number.isNaN(ms)) return text;
  const iso = new Date(ms).toISOString();
  return iso.endsWith(".000Z") ? iso.slice(0, -5) + "Z" : iso;
}

/** utcIso, but a bare date (2025-03-14) stays a date: a day has no zone to normalise. */
export function utcDateOrIso(text: string): string {
  return DATE_ONLY.test(text.trim()) ? text.trim() : utcIso(text);
}
