// Saved plans (`svc config plan -o plan.json`, then `svc config apply plan.json`): the file is
// checked as strictly as a manifest, since it is applied as it is.
import { LineCounter, parseDocument, type Node } from "yaml";
import { isKind } from "../schemas";
import type { ManifestIssue, Plan, PlannedChange } from "./types";
import { ManifestError } from "./errors";
import { validateDocument } from "./validate";
import { ownerFor } from "./owner";
import { locateNode, nodePos } from "./yaml-locate";

export const PLAN_FORMAT = "svc-plan/v1";
const ACTIONS = new Set(["create", "update", "delete", "unchanged"]);
const FILE = "<plan>";

/** Parse and validate a saved plan (JSON, or YAML); ManifestError listing every problem if it is not one. */
export function readPlanFile(text: string): Plan {
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: true });
  const issues: ManifestIssue[] = [];
  if (doc.errors.length) {
    for (const e of doc.errors) {
      const lp = e.linePos?.[0] ?? lc.linePos(e.pos[0]);
      issues.push({ severity: "error", path: "", message: `not a plan file: ${e.message.split("\n")[0]}`, pos: { file: FILE, line: lp.line, column: lp.col } });
    }
    throw new ManifestError(issues, "invalid plan file");
  }
  const root = doc.contents as Node | null;
  const at = (path: string) => nodePos(FILE, lc, locateNode(doc, root, path));
  const bad = (path: string, message: string) => issues.push({ severity: "error", path, message, pos: at(path) });
  const p = doc.toJS() as any;
  if (p === null || typeof p !== "object" || Array.isArray(p)) {
    bad("", `not a plan file: expected an object with format "${PLAN_FORMAT}"`);
    throw new ManifestError(issues, "invalid plan file");
  }
  if (p.format !== PLAN_FORMAT) bad("/format", `format must be "${PLAN_FORMAT}" (got ${JSON.stringify(p.format)})`);
  if (!Number.isInteger(p.revision) || p.revision < 0) bad("/revision", "revision must be a non-negative integer");
  if (typeof p.source !== "string" || p.source === "") bad("/source", "source must be a non-empty string");
  if (p.prune !== undefined && typeof p.prune !== "boolean") bad("/prune", "prune must be true or false");
  if (!Array.isArray(p.changes)) bad("/changes", "changes must be a list");
  if (issues.length) throw new ManifestError(issues, "invalid plan file");

  const owner = ownerFor(p.source);
  // an exported document may name another source as owner (metadata.owner); the change keeps it.
  // Never "api" from a file: api-owned objects are the ones prune leaves alone.
  const RECORDED_OWNER = /^config:.+$/;
  const changes: PlannedChange[] = [];
  const summary = { create: 0, update: 0, delete: 0, unchanged: 0 };
  p.changes.forEach((c: any, i: number) => {
    const base = `/changes/${i}`;
    const before = issues.length;
    if (c === null || typeof c !== "object") return void bad(base, "a change must be an object");
    if (!ACTIONS.has(c.action)) bad(`${base}/action`, `action must be one of create, update, delete, unchanged (got ${JSON.stringify(c.action)})`);
    if (!isKind(c.kind)) bad(`${base}/kind`, `unknown kind ${JSON.stringify(c.kind)}`);
    if (typeof c.name !== "string" || c.name === "") bad(`${base}/name`, "name must be a non-empty string");
    if (c.fields !== undefined && !Array.isArray(c.fields)) bad(`${base}/fields`, "fields must be a list");
    if (c.highRisk !== undefined && typeof c.highRisk !== "string") bad(`${base}/highRisk`, "highRisk must be a string");
    if (issues.length > before) return;
    if (c.action === "create" || c.action === "update") {
      if (c.owner !== owner && !(typeof c.owner === "string" && RECORDED_OWNER.test(c.owner))) bad(`${base}/owner`, `owner must be "${owner}" (the plan's source), or the config:<source> an exported document recorded`);
      const envelope = { apiVersion: "svc/v1", kind: c.kind, metadata: c.labels && Object.keys(c.labels).length ? { name: c.name, labels: c.labels } : { name: c.name }, spec: c.spec };
      for (const prob of validateDocument(c.kind, envelope)) {
        const sub = prob.path.startsWith("/metadata/labels") ? prob.path.replace("/metadata", "") : prob.path.startsWith("/metadata/name") ? "/name" : prob.path;
        bad(`${base}${sub}`, prob.message);
      }
      if (issues.length > before) return;
      c.spec = envelope.spec;
    } else if (typeof c.owner !== "string") {
      bad(`${base}/owner`, "owner must be a string");
      return;
    }
    const out: PlannedChange = { action: c.action, kind: c.kind, name: c.name, owner: c.owner, fields: c.fields ?? [] };
    if (c.highRisk) out.highRisk = c.highRisk;
    if (c.action === "create" || c.action === "update") {
      out.spec = c.spec;
      out.labels = c.labels ?? {};
    }
    summary[c.action as keyof typeof summary]++;
    changes.push(out);
  });
  if (issues.length) throw new ManifestError(issues, "invalid plan file");
  return {
    format: PLAN_FORMAT,
    revision: p.revision,
    source: p.source,
    prune: !!p.prune,
    createdAt: typeof p.createdAt === "string" ? p.createdAt : new Date(0).toISOString(),
    changes,
    summary,
    warnings: Array.isArray(p.warnings) ? p.warnings : [],
  };
}
