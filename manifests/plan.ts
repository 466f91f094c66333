// Desired objects vs the store -> a plan: create / update (field diff, secrets redacted) /
// unchanged / delete, with ownership, prune and high-risk rules. Linear in objects + store size.
import { singletonKinds, type Kind } from "../schemas";
import type { ResourceStore, StoredObject } from "../prisma/resource-store";
import type { DesiredObject, FieldChange, ManifestIssue, Plan, PlannedChange } from "./types";
import { deepEqual, diffFields, diffLabels } from "./diff";
import { joinPointer, redactAt } from "./pointer";
import { riskOf } from "./risk";
import { API_OWNER, ownerFor } from "./owner";
import { ManifestError, PruneAllRefusedError } from "./errors";
import { checkCurrencies } from "./currencies";

export interface PlanOptions {
  /** names the owner written: "config:<source>" */
  source: string;
  /** delete objects of this source, of the kinds the document declares, that it no longer declares */
  prune?: boolean;
  /**
   * Let prune delete every object of the source. Without it, a prune that would leave the source
   * with nothing is refused (PruneAllRefusedError). A document that declares no objects at all,
   * with prune and allowPruneAll, deletes every object of the source, whatever its kind.
   */
  allowPruneAll?: boolean;
  /** issues to carry into plan.warnings (e.g. load warnings such as clamped values) */
  warnings?: ManifestIssue[];
}

const key = (kind: string, name: string) => `${kind}/${name}`;

export function makePlan(store: ResourceStore, objects: DesiredObject[], opts: PlanOptions): Plan {
  const sourceOwner = ownerFor(opts.source);
  const owner = sourceOwner;
  const existing = store.list(); // objects being deleted count as absent
  const byKey = new Map<string, StoredObject>();
  for (const o of existing) byKey.set(key(o.kind, o.name), o);

  const changes: PlannedChange[] = [];
  const warnings: ManifestIssue[] = (opts.warnings ?? []).filter((w) => w.severity === "warning");
  const desired = new Set<string>();

  for (const o of objects) {
    const k = key(o.kind, o.name);
    // an exported document names its owner: applying it back keeps that owner
    const owner = o.owner ?? sourceOwner;
    if (desired.has(k)) {
      throw new ManifestError([{ severity: "error", path: "/metadata/name", message: `duplicate ${k}`, pos: o.pos, kind: o.kind, name: o.name }]);
    }
    desired.add(k);
    const cur = byKey.get(k);
    const labels = o.labels ?? {};
    if (!cur) {
      const fields: FieldChange[] = [];
      for (const [f, v] of Object.entries(o.spec ?? {})) {
        fields.push({ path: joinPointer("/spec", f), after: redactAt(o.kind, joinPointer("", f), v) });
      }
      fields.push(...diffLabels({}, labels));
      changes.push(withRisk({ action: "create", kind: o.kind, name: o.name, owner, fields, spec: o.spec, labels }, undefined));
      continue;
    }
    if (cur.owner === owner && deepEqual(cur.spec, o.spec) && deepEqual(cur.labels ?? {}, labels)) {
      changes.push({ action: "unchanged", kind: o.kind, name: o.name, owner, fields: [] });
      continue;
    }
    const fields = [...diffFields(o.kind, cur.spec, o.spec, "/spec"), ...diffLabels(cur.labels ?? {}, labels)];
    if (cur.owner !== owner) {
      fields.push({ path: "/metadata/owner", before: cur.owner, after: owner });
      warnings.push({
        severity: "warning",
        path: "/metadata/name",
        message:
          cur.owner === API_OWNER
            ? `${k} was made through the API; applying this plan makes ${owner} its owner (a later --prune of this source may delete it)`
            : `${k} is owned by ${cur.owner}; applying this plan makes ${owner} its owner`,
        pos: o.pos,
        kind: o.kind,
        name: o.name,
      });
    }
    changes.push(withRisk({ action: "update", kind: o.kind, name: o.name, owner, fields, spec: o.spec, labels }, cur));
  }

  if (opts.prune) {
    const declaredKinds = new Set<string>(objects.map((o) => o.kind));
    const owned = existing.filter((o) => o.owner === owner);
    const everyKind = objects.length === 0;
    const gone = owned.filter((o) => !desired.has(key(o.kind, o.name)) && (everyKind || declaredKinds.has(o.kind)));
    const wouldEmpty = owned.length > 0 && (everyKind || gone.length === owned.length);
    if (wouldEmpty && !opts.allowPruneAll) {
      const sample = owned.slice(0, 5).map((o) => key(o.kind, o.name)).join(", ");
      throw new PruneAllRefusedError(
        `refusing to prune: the document declares none of the ${owned.length} objects of source "${opts.source}" ` +
          `(${sample}${owned.length > 5 ? ", …" : ""}), so prune would delete all of them; ` +
          `pass allowPruneAll (--allow-prune-all) if that is intended`,
      );
    }
    gone.sort((a, b) => (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const o of gone) {
      changes.push(withRisk({ action: "delete", kind: o.kind as Kind, name: o.name, owner: o.owner, fields: [] }, o));
    }
  }

  checkSingletons(changes, byKey, objects);
  checkCurrencies(existing, objects, changes);

  const summary = { create: 0, update: 0, delete: 0, unchanged: 0 };
  for (const c of changes) summary[c.action]++;
  return {
    format: "svc-plan/v1",
    revision: store.revision,
    source: opts.source,
    prune: !!opts.prune,
    createdAt: new Date().toISOString(),
    changes,
    summary,
    warnings,
  };
}

function withRisk(c: PlannedChange, cur: StoredObject | undefined): PlannedChange {
  const r = riskOf(c.action, c.kind, cur?.spec, c.spec, cur?.owner);
  if (r) c.highRisk = r;
  return c;
}

/** After the plan, at most one object of each singleton kind may exist. */
function checkSingletons(changes: PlannedChange[], byKey: Map<string, StoredObject>, objects: DesiredObject[]): void {
  const created = changes.filter((c) => c.action === "create" && singletonKinds.has(c.kind));
  if (created.length === 0) return;
  const deleted = new Set(changes.filter((c) => c.action === "delete").map((c) => key(c.kind, c.name)));
  const issues: ManifestIssue[] = [];
  for (const c of created) {
    for (const o of byKey.values()) {
      if (o.kind !== c.kind || o.name === c.name || deleted.has(key(o.kind, o.name))) continue;
      const d = objects.find((x) => x.kind === c.kind && x.name === c.name);
      issues.push({
        severity: "error",
        path: "/metadata/name",
        message:
          `${c.kind} is a singleton and ${c.kind}/${o.name} already exists (owner ${o.owner}); ` +
          `name this object "${o.name}" to update it, or remove the existing one first`,
        pos: d?.pos,
        kind: c.kind,
        name: c.name,
      });
    }
  }
  if (issues.length) throw new ManifestError(issues);
}
