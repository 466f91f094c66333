// Normalization after validation (defaults are filled by the validator): MemoryConfig values
// are clamped into the spec's ranges, each clamp reported as a warning.
import { memoryRanges } from "../schemas/kinds/memory-config";
import type { Kind } from "../schemas";

export interface Clamp {
  /** JSON pointer inside the document */
  path: string;
  message: string;
}

/** Normalize `spec` of `kind` in place; returns what was changed. */
export function normalizeSpec(kind: Kind, spec: any): Clamp[] {
  if (kind !== "MemoryConfig" || !spec || typeof spec !== "object") return [];
  const out: Clamp[] = [];
  for (const [field, r] of Object.entries(memoryRanges)) {
    const v = spec[field];
    if (typeof v !== "number") continue;
    const clamped = Math.min(r.max, Math.max(r.min, v));
    if (clamped !== v) {
      spec[field] = clamped;
      out.push({
        path: `/spec/${field}`,
        message: `${field} ${v} is outside the range ${r.min} to ${r.max}; clamped to ${clamped}`,
      });
    }
  }
  return out;
}
