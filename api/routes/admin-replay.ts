// The plan route's replay (docs/replay.md): the plan's proposed state and the store's current
// state judged over the audit entries of a window (engines/gateway/replay). Parameters come from
// the JSON body or, for a YAML body, the query string: replay (24h, 7d), from, to (UTC).
import type { Svc } from "../../engines/svc";
import type { Plan } from "../../manifests";
import { SvcError } from "../../engines/errors";
import { proposedObjects, replay, replayWindow, type ReplayReport } from "../../engines/gateway/replay";

/** Exit code of a plan whose replay finds requests the proposed state refuses and the current
 * one admits (CI gates a merge on it); 2 stays "changes, nothing newly refused". */
export const EXIT_NEW_REFUSALS = 4;

export interface ReplayParams {
  replay?: string;
  from?: string;
  to?: string;
}

/** The replay parameters of a request, or undefined when it asks for none. */
export function replayParams(src: Record<string, unknown>): ReplayParams | undefined {
  const out: ReplayParams = {};
  for (const k of ["replay", "from", "to"] as const) {
    const v = src[k];
    if (v === undefined || v === null) continue;
    if (typeof v !== "string" || v.length > 64) throw new SvcError("invalid", "invalid_request", `${k} must be a string such as ${k === "replay" ? '"24h"' : '"2026-11-27T00:00:00Z"'}`, k);
    out[k] = v;
  }
  return Object.keys(out).length ? out : undefined;
}

export async function replayPlan(svc: Svc, plan: Plan, p: ReplayParams): Promise<ReplayReport> {
  const w = replayWindow(p, Date.now());
  // entries still queued in memory belong to the window too
  await svc.engines.gateway?.audit.flush();
  const current = svc.store.list();
  return replay(svc.db, current, proposedObjects(current, plan.changes), w);
}
