// `svc config plan --replay`: the replay report as text (per key, then the one summary line) and
// the exit code of --detailed-exitcode. The replay itself runs in the server (POST
// /admin/config/plan with replay/from/to) or, offline, on the store (engines/gateway/replay).
import type { Plan } from "../manifests";
import type { OpenedDb } from "../prisma/client";
import type { ResourceStore } from "../prisma/resource-store";
import type { ReplayReport } from "../engines/gateway/replay";
import { CliError } from "./errors";
// type-only imports and one pure function: nothing of the gateway loads at start-up
import { dollars as usd } from "../engines/gateway/replay/report";

/** --detailed-exitcode: the replay found requests the plan newly refuses (2 stays "changes"). */
export const EXIT_NEW_REFUSALS = 4;

export interface ReplayFlags {
  replay?: string;
  from?: string;
  to?: string;
}

export const wantsReplay = (o: ReplayFlags): boolean => o.replay !== undefined || o.from !== undefined || o.to !== undefined;

/** The replay's parameters for the admin plan route. */
export function replayBody(o: ReplayFlags): Record<string, string> {
  const out: Record<string, string> = {};
  if (o.replay !== undefined) out.replay = o.replay;
  if (o.from !== undefined) out.from = o.from;
  if (o.to !== undefined) out.to = o.to;
  return out;
}

/** Offline: replay on the store's own database. */
export async function replayOffline(store: ResourceStore, db: OpenedDb, plan: Plan, o: ReplayFlags): Promise<ReplayReport> {
  const { replay, replayWindow, proposedObjects } = await import("../engines/gateway/replay");
  let w;
  try {
    w = replayWindow(o, Date.now());
  } catch (e) {
    throw new CliError(`--${(e as Error).message}`); // "replay: ..." / "from: ...": the flag it names
  }
  const current = store.list();
  return replay(db, current, proposedObjects(current, plan.changes), w);
}

/** The report as text: the keys with a difference, their reasons and first refusals, roll-ups,
 * then the summary line. */
export function formatReplay(r: ReplayReport): string {
  const out: string[] = ["", `Replay of ${r.window.from} .. ${r.window.to}: ${r.replayed} model calls of ${r.entries} keyed entries`];
  if (r.workerFailed) out.push(`  note: ${r.workerFailed}; the window was replayed again on one thread`);
  if (r.window.availableFrom) out.push(`  note: the store holds entries from ${r.window.availableFrom} only (${Math.round(r.window.coverage * 100)}% of the window; older ones are past retention)`);
  const other = Object.entries(r.notReplayed);
  if (other.length) out.push(`  not replayed (not model calls): ${other.map(([a, n]) => `${a} ${n}`).join(", ")}`);
  for (const k of r.keys) {
    const lines: string[] = [];
    for (const x of k.newRefusals) lines.push(`    - ${x.count} refused: ${x.code}${x.limit ? ` (${x.limit})` : ""}, first at ${x.first}: ${x.message}`);
    if (k.newlyAdmitted) lines.push(`    + ${k.newlyAdmitted} newly allowed`);
    for (const x of k.reroutes) lines.push(`    ~ ${x.count} routed ${x.from} -> ${x.to}`);
    const s = k.spend;
    if (s.proposedMicros !== s.currentMicros) lines.push(`    ~ spend ${usd(s.currentMicros)} -> ${usd(s.proposedMicros)} (recorded ${usd(s.recordedMicros)})`);
    for (const [field, label] of [["alerts", "alerts"], ["webhooks", "webhooks"]] as const) {
      for (const [ev, c] of Object.entries(k[field])) if (c.current !== c.proposed) lines.push(`    ~ ${label} ${ev}: ${c.current} -> ${c.proposed}`);
    }
    if (!lines.length) continue;
    out.push(`  key ${k.key}${k.name && k.name !== k.key ? ` (${k.name})` : ""}: ${k.requests} requests`, ...lines);
  }
  for (const [label, rows] of [["team", r.teams], ["organization", r.organizations]] as const) {
    for (const t of rows) {
      if (!t.newRefusals && !t.newlyAdmitted && !t.rerouted && t.spend.currentMicros === t.spend.proposedMicros) continue;
      out.push(`  ${label} ${t.id}: ${t.keys} keys, ${t.newRefusals} newly refused, ${t.newlyAdmitted} newly allowed, ${t.rerouted} rerouted, spend ${usd(t.spend.currentMicros)} -> ${usd(t.spend.proposedMicros)}`);
    }
  }
  out.push("", r.summary);
  return out.join("\n");
}
