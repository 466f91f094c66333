// Cheap deep equality and field-level diffs of JSON values (key order never matters).
import type { FieldChange } from "./types";
import { joinPointer, redactAt } from "./pointer";

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  let n = 0;
  for (const k in ao) {
    if (!Object.prototype.hasOwnProperty.call(ao, k)) continue;
    const av = ao[k];
    if (av === undefined) continue;
    n++;
    if (!Object.prototype.hasOwnProperty.call(bo, k) || !deepEqual(av, bo[k])) return false;
  }
  let m = 0;
  for (const k in bo) if (Object.prototype.hasOwnProperty.call(bo, k) && bo[k] !== undefined) m++;
  return n === m;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * Field changes from `before` to `after`, as pointers under `prefix` (e.g. "/spec").
 * Objects recurse; arrays and scalars are reported whole. Values at or below a secret field
 * of `kind` read "(redacted)". `specBase` is the pointer of `before`/`after` inside spec.
 */
export function diffFields(kind: string, before: unknown, after: unknown, prefix: string, specBase = ""): FieldChange[] {
  const out: FieldChange[] = [];
  walk(kind, before, after, prefix, specBase, out);
  return out;
}

function walk(kind: string, a: unknown, b: unknown, path: string, specPath: string, out: FieldChange[]): void {
  if (deepEqual(a, b)) return;
  if (isPlainObject(a) && isPlainObject(b)) {
    for (const k of Object.keys(a)) {
      walk(kind, a[k], b[k], joinPointer(path, k), joinPointer(specPath, k), out);
    }
    for (const k of Object.keys(b)) {
      if (!(k in a)) walk(kind, undefined, b[k], joinPointer(path, k), joinPointer(specPath, k), out);
    }
    return;
  }
  const fc: FieldChange = { path };
  if (a !== undefined) fc.before = redactAt(kind, specPath, a);
  if (b !== undefined) fc.after = redactAt(kind, specPath, b);
  out.push(fc);
}

/** Label changes as /metadata/labels/<key> pointers. */
export function diffLabels(before: Record<string, string>, after: Record<string, string>): FieldChange[] {
  const out: FieldChange[] = [];
  for (const k of Object.keys(before)) {
    if (before[k] !== after[k]) {
      const fc: FieldChange = { path: joinPointer("/metadata/labels", k), before: before[k] };
      if (k in after) fc.after = after[k];
      out.push(fc);
    }
  }
  for (const k of Object.keys(after)) {
    if (!(k in before)) out.push({ path: joinPointer("/metadata/labels", k), after: after[k] });
  }
  return out;
}
