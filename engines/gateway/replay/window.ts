// The window a replay covers: a duration back from now (24h, 7d, 90m) or explicit UTC bounds.
import { invalidRequest } from "../../errors";

const UNIT: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

export interface ReplayWindow {
  from: number;
  to: number;
}

/** "24h" -> ms; a clear error naming the parameter otherwise. */
export function parseDuration(s: string, param = "replay"): number {
  const m = /^(\d+(?:\.\d+)?)\s*([mhdw])$/.exec(s.trim());
  // beyond MAX_SPAN no window start is a date (new Date(...).toISOString() throws a RangeError,
  // a 500): refused here as the operator's mistake it is
  const ms = m ? Math.round(Number(m[1]) * UNIT[m[2]]) : NaN;
  if (!m || !(ms > 0) || ms > MAX_SPAN) throw invalidRequest(`${param}: "${s}" is not a duration such as 90m, 24h, 7d or 2w`, param);
  return ms;
}

/** The largest span a JavaScript date can move (±8.64e15 ms around 1970). */
const MAX_SPAN = 8.64e15;

/** A UTC instant: ISO 8601 with Z or an offset, or a date (midnight UTC). */
export function parseInstant(s: string, param: string): number {
  const t = /^\d{4}-\d{2}-\d{2}$/.test(s) ? Date.parse(s + "T00:00:00Z") : /(Z|[+-]\d{2}:?\d{2})$/i.test(s) ? Date.parse(s) : NaN;
  // Date.parse rolls a day the month does not have over into the next (2026-02-30 -> March 2):
  // such a date is a mistake, not another window
  const ymd = /^(\d{4})-(\d{2})-(\d{2})/.exec(s);
  const real = !ymd || new Date(Date.UTC(+ymd[1], +ymd[2] - 1, +ymd[3])).getUTCDate() === +ymd[3];
  if (!Number.isFinite(t) || !real) throw invalidRequest(`${param}: "${s}" is not a UTC time (write 2026-11-27T00:00:00Z or 2026-11-27)`, param);
  return t;
}

/** The window from a duration and/or bounds: --from/--to win; a duration alone ends now; a
 * duration with --from starts there. */
export function replayWindow(o: { replay?: string; from?: string; to?: string }, now: number): ReplayWindow {
  const dur = o.replay !== undefined && o.replay !== "" ? parseDuration(o.replay) : undefined;
  let from = o.from !== undefined ? parseInstant(o.from, "from") : undefined;
  let to = o.to !== undefined ? parseInstant(o.to, "to") : undefined;
  if (from === undefined && to === undefined && dur === undefined) throw invalidRequest("replay: give a window (24h, 7d) or from/to", "replay");
  if (to === undefined) to = from !== undefined && dur !== undefined ? from + dur : now;
  if (from === undefined) from = to - (dur ?? 86_400_000);
  if (!(from < to)) throw invalidRequest("replay: the window's start must be before its end", "from");
  // a duration that takes the window past the dates JavaScript has (a RangeError later: a 500)
  if (!(from >= -MAX_SPAN && to <= MAX_SPAN)) throw invalidRequest(`replay: "${o.replay}" takes the window past the year 275760`, "replay");
  return { from, to };
}
