// manifests/: documents in and out. Parse YAML, validate (ajv), normalize, diff to a plan,
// apply a plan to the store, export without secrets.
export type { DesiredObject, ManifestIssue, SourcePos, Plan, PlannedChange, FieldChange, ApplyResult, ChangeAction } from "./types";
export { ManifestError, ConfirmationRequiredError, PruneAllRefusedError, StaleRevisionError, formatIssue } from "./errors";
export { loadText, loadPaths, assertValid, type LoadResult } from "./load";
export { makePlan, type PlanOptions } from "./plan";
export { applyPlan } from "./apply";
export { readPlanFile, PLAN_FORMAT } from "./plan-file";
export { exportObjects, type ExportOptions } from "./export";
export { schemaText } from "./schema-text";
export { ownerFor, API_OWNER } from "./owner";
