// The audit entries a replay reads: only the fields the gate judges (never a prompt), streamed in
// the store's order (timestamp, id) by the store's read-only replay reader
// (prisma/repos/audit-replay.ts): one pass in pages, never a query per entry.
import { oldestAuditMs, replayRows, type ReplayRow, type ReplaySource } from "../../../prisma/repos/audit-replay";

export type { ReplaySource } from "../../../prisma/repos/audit-replay";

export interface ReplayEntry {
  id: string;
  /** epoch ms: the simulated clock of the replay */
  ts: number;
  keyId: string;
  action: string;
  model: string | null;
  provider: string | null;
  status: string;
  promptTokens: number;
  completionTokens: number;
  /** recorded cost in micro-USD */
  costMicros: number;
  ip: string | null;
  /** metadata.routing (strategy, fallback), the one caller field the gate's routing reads */
  routing?: { strategy?: unknown; fallback?: unknown };
}

/** metadata.routing of a row whose metadata names it (the reader leaves the others out). */
function routingOf(meta: string | null): ReplayEntry["routing"] {
  if (meta === null) return undefined;
  try {
    const m = JSON.parse(meta);
    if (m && typeof m.routing === "object" && m.routing) return m.routing;
  } catch {
    /* a truncated marker: no hints */
  }
  return undefined;
}

function toEntry(r: ReplayRow): ReplayEntry {
  return {
    id: r[0],
    ts: r[1],
    keyId: r[2],
    action: r[3],
    model: r[4],
    provider: r[5],
    status: r[6],
    promptTokens: r[7] ?? 0,
    completionTokens: r[8] ?? 0,
    costMicros: r[9] ?? 0,
    ip: r[10],
    routing: routingOf(r[11]),
  };
}

/** Keyed audit entries with from <= timestamp < to, oldest first, in pages. */
export async function* auditEntries(src: ReplaySource, from: number, to: number): AsyncGenerator<ReplayEntry[]> {
  for await (const rows of replayRows(src, from, to)) yield rows.map(toEntry);
}

/** The oldest entry the store still holds (retention may have pruned the start of a window). */
export const oldestEntry = (src: ReplaySource): Promise<number | null> => oldestAuditMs(src);
