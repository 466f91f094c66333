// Errors thrown by manifests/: callers map them to exit codes / HTTP statuses.
import type { ManifestIssue } from "./types";
export { StaleRevisionError } from "../prisma/resource-store";

/** "file:line:col: /json/path: message" (or "file: /path: message" without a position). */
export function formatIssue(i: ManifestIssue): string {
  const where = i.pos ? `${i.pos.file}:${i.pos.line}:${i.pos.column}` : "<input>";
  const sev = i.severity === "warning" ? "warning: " : "";
  return `${where}: ${i.path || "/"}: ${sev}${i.message}`;
}

/** One or more documents are invalid; nothing was changed. */
export class ManifestError extends Error {
  issues: ManifestIssue[];
  constructor(issues: ManifestIssue[], headline?: string) {
    const errors = issues.filter((i) => i.severity === "error");
    const shown = [...errors, ...issues.filter((i) => i.severity !== "error")];
    const n = errors.length || issues.length;
    const head = headline ?? `${n} manifest ${n === 1 ? "error" : "errors"}; nothing was changed`;
    super(`${head}:\n${shown.map((i) => "  " + formatIssue(i)).join("\n")}`);
    this.name = "ManifestError";
    this.issues = issues;
  }
}

/** The plan holds high-risk changes and was applied without confirm / --yes. */
export class ConfirmationRequiredError extends Error {
  reasons: string[];
  constructor(reasons: string[]) {
    super(
      `confirmation required (--yes, or "confirm": true) for ${reasons.length} high-risk ${reasons.length === 1 ? "change" : "changes"}:\n` +
        reasons.map((r) => "  - " + r).join("\n"),
    );
    this.name = "ConfirmationRequiredError";
    this.reasons = reasons;
  }
}

/** --prune would delete every object of the source; pass allowPruneAll to mean it. */
export class PruneAllRefusedError extends Error {
  constructor(
    message = "refusing to prune: the document would delete every object of this source; pass allowPruneAll (--allow-prune-all) if that is intended",
  ) {
    super(message);
    this.name = "PruneAllRefusedError";
  }
}
