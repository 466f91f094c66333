// Apply a plan: one store transaction against the revision the plan was made for.
import type { ResourceStore, WriteOp } from "../prisma/resource-store";
import type { ApplyResult, ManifestIssue, Plan } from "./types";
import { ConfirmationRequiredError, ManifestError } from "./errors";
import { riskOf } from "./risk";
import { API_OWNER, ownerFor } from "./owner";

/**
 * Write every create/update/delete of `plan` in one transaction (unchanged entries are not
 * written). Refuses with ConfirmationRequiredError when a change is high-risk and `confirm` is
 * not set; with StaleRevisionError when the store moved since the plan was made. High risk is
 * re-checked against the store (a saved plan's own flags are not trusted alone).
 */
export async function applyPlan(store: ResourceStore, plan: Plan, opts: { confirm?: boolean } = {}): Promise<ApplyResult> {
  const owner = ownerFor(plan.source);
  const reasons: string[] = [];
  const problems: ManifestIssue[] = [];
  const ops: WriteOp[] = [];
  const stale = store.revision !== plan.revision; // the store write refuses it; skip the checks below
  for (const c of plan.changes) {
    if (c.action === "unchanged") continue;
    const cur = stale ? undefined : store.get(c.kind, c.name);
    const live = cur && !cur.deleting ? cur : undefined;
    if (c.action === "delete") {
      if (live && (live.owner === API_OWNER || live.owner !== owner)) {
        problems.push({ severity: "error", path: "", kind: c.kind, name: c.name, message: `refusing to delete ${c.kind}/${c.name}: it is owned by ${live.owner}, not ${owner}` });
      }
      ops.push({ op: "delete", kind: c.kind, name: c.name });
    } else {
      // c.owner is the plan's source owner, or the owner an exported document recorded
      ops.push({ op: "upsert", kind: c.kind, name: c.name, owner: c.owner || owner, spec: c.spec, labels: c.labels ?? {} });
    }
    const risk = c.highRisk ?? (stale ? undefined : riskOf(c.action, c.kind, live?.spec, c.spec, live?.owner));
    if (risk) reasons.push(`${c.action} ${c.kind}/${c.name}: ${risk}`);
  }
  if (problems.length) throw new ManifestError(problems, "the plan cannot be applied");
  if (reasons.length && !opts.confirm && !stale) throw new ConfirmationRequiredError(reasons);
  const res = await store.write(ops, { expectedRevision: plan.revision });
  return { revision: res.revision, applied: res.changed.length, plan };
}
