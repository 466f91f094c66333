// Shapes that flow through manifests/: loaded documents, validated objects, plans.
import type { Kind } from "../schemas";

/** Where a document (or a value inside it) came from, for error messages. */
export interface SourcePos {
  file: string; // path, or "<stdin>" / "<request>"
  line: number; // 1-based
  column: number; // 1-based
}

export interface ManifestIssue {
  severity: "error" | "warning";
  message: string;
  /** JSON pointer inside the document, e.g. /spec/rate_limits/per_minute */
  path: string;
  pos?: SourcePos;
  kind?: string;
  name?: string;
}

/** A validated, normalized desired object. */
export interface DesiredObject {
  kind: Kind;
  name: string;
  labels: Record<string, string>;
  spec: any;
  pos: SourcePos;
  /** metadata.owner (an exported document records its owner): kept instead of the plan's source */
  owner?: string;
}

export type ChangeAction = "create" | "update" | "delete" | "unchanged";

export interface FieldChange {
  /**
   * JSON pointer inside the document: /spec/... for spec fields, /metadata/labels/<key> for
   * labels, /metadata/owner when the plan takes ownership. (Rooted at the document, not at spec,
   * because ApiKey's spec has a `metadata` field of its own.)
   */
  path: string;
  before?: unknown; // "(redacted)" for secret fields
  after?: unknown;
}

export interface PlannedChange {
  action: ChangeAction;
  kind: Kind;
  name: string;
  owner: string; // owner after apply
  fields: FieldChange[]; // for update (and create: every top-level field)
  /** why this change needs --yes / confirm:true, when it does */
  highRisk?: string;
  /** the desired spec (secrets are references, never clear) */
  spec?: unknown;
  labels?: Record<string, string>;
}

export interface Plan {
  format: "svc-plan/v1";
  /** store revision the plan was made against; apply refuses a stale one */
  revision: number;
  source: string; // owner written: "config:<source>"
  prune: boolean;
  createdAt: string;
  changes: PlannedChange[];
  summary: { create: number; update: number; delete: number; unchanged: number };
  warnings: ManifestIssue[];
}

export interface ApplyResult {
  revision: number;
  applied: number;
  plan: Plan;
}
