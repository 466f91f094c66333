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
  if (!m || Number(m[1]) <= 0) throw invalidRequest(`${param}: "${s}" is not a duration such as 90m, 24h, 7d or 2w`, param);
  return Math.round(Number(m[1]) * UNIT[m[2]]);
}

/** A UTC instant: ISO 8601 with Z or an offset, or a date (midnight UTC). */
export function parseInstant(s: string, param: string): number {
  const t = /^\d{4}-\d{2}-\d{2}$/.test(s) ? Date.parse(s + "T00:00:00Z") : /(Z|[+-]\d{2}:?\d{2})$/i.test(s) ? Date.parse(s) : NaN;
  if (!Number.isFinite(t)) throw invalidRequest(`${param}: "${s}" is not a UTC time (write 2026-11-27T00:00:00Z or 2026-11-27)`, param);
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
  return { from, to };
}
