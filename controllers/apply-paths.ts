// Load manifest paths, plan against the store and apply: the one sequence behind start-up
// config, the quickstart, watch mode and the CLI's offline apply.
import { loadPaths, assertValid, makePlan, applyPlan, ownerFor, StaleRevisionError } from "../manifests";
import type { ResourceStore } from "../prisma/resource-store";
import type { ManifestIssue, Plan } from "../manifests/types";

export interface ApplyPathsOptions {
  source: string;
  prune?: boolean;
  allowPruneAll?: boolean;
  confirm?: boolean;
  /**
   * Prune objects of the source whatever their kind, not only kinds the documents declare. Watch
   * mode uses it: the folder is the whole desired state of its source, so removing the last
   * file of a kind removes those objects too. (An empty folder is still refused.)
   * `serve --config` uses it too: "objects of that source it no longer declares are deleted"
   * (docs/cli.md), and without it a start-up config whose last AccessPolicy file was removed
   * kept that policy for ever.
   */
  pruneAllKinds?: boolean;
  stdin?: string;
}

export interface ApplyPathsResult {
  plan: Plan;
  revision: number;
  /** changes written (0 when the plan had none) */
  applied: number;
  warnings: ManifestIssue[];
}

/** Throws ManifestError, PruneAllRefusedError, ConfirmationRequiredError or StaleRevisionError. */
export async function applyPaths(store: ResourceStore, paths: string[], opts: ApplyPathsOptions): Promise<ApplyPathsResult> {
  const loaded = await loadPaths(paths, opts.stdin !== undefined ? { stdin: opts.stdin } : {});
  const objects = assertValid(loaded);
  const warnings = loaded.issues.filter((i) => i.severity === "warning");
  // The plan is made here, never shown to anyone: when another write (the admin API, an API-made
  // key, another process on the same store) lands between it and the store write, plan again
  // instead of dropping the save with "make a new plan" (watch mode would then miss that save
  // until the next one). As the admin apply route does (api/routes/admin-config.ts, applyFresh).
  for (let attempt = 0; ; attempt++) {
    const plan = makePlan(store, objects, { source: opts.source, prune: opts.prune, allowPruneAll: opts.allowPruneAll });
    if (opts.prune && opts.pruneAllKinds) addUndeclaredKindDeletes(store, plan, objects);
    if (!hasChanges(plan)) return { plan, revision: store.revision, applied: 0, warnings };
    try {
      const r = await applyPlan(store, plan, { confirm: opts.confirm });
      return { plan, revision: r.revision, applied: r.applied, warnings };
    } catch (e) {
      if (!(e instanceof StaleRevisionError) || attempt >= 3) throw e;
      await store.reload(); // another process's write: read it before planning again
    }
  }
}

export function hasChanges(plan: Plan): boolean {
  return plan.summary.create + plan.summary.update + plan.summary.delete > 0;
}

function addUndeclaredKindDeletes(store: ResourceStore, plan: Plan, objects: { kind: string; name: string }[]): void {
  const owner = ownerFor(plan.source);
  const key = (k: string, n: string) => `${k}/${n}`;
  const covered = new Set([...objects.map((o) => key(o.kind, o.name)), ...plan.changes.map((c) => key(c.kind, c.name))]);
  for (const o of store.list({ owner })) {
    if (covered.has(key(o.kind, o.name))) continue;
    // highRisk is re-derived by applyPlan from the store; confirm is the caller's decision
    plan.changes.push({ action: "delete", kind: o.kind as Plan["changes"][number]["kind"], name: o.name, owner: o.owner, fields: [] });
    plan.summary.delete++;
  }
}
