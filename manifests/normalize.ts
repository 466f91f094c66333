// Normalization of MemoryConfig: the spec's ranges are applied, never refused. Non-integers of
// integer fields are rounded and values out of range are clamped, each change reported as a
// warning. The store keeps the spec as written (so export and plan round-trip the user's file);
// the memory engine uses the normalized values and its controller repeats these warnings in the
// object's condition.
import { memoryRanges } from "../schemas/kinds/memory-config";
import type { Kind } from "../schemas";

export interface Clamp {
  /** JSON pointer inside the document */
  path: string;
  message: string;
}

/** Fields of MemoryConfig that hold whole numbers (rounded half away from zero). */
const integerFields = new Set(["memoryBudgetTokens", "summaryDebounceSeconds", "consolidationIntervalHours", "episodeRetentionDays"]);

/** The normalized value of one MemoryConfig field and, when it changed, why. */
export function normalizeMemoryValue(field: keyof typeof memoryRanges, v: number): { value: number; note?: string } {
  const r = memoryRanges[field];
  const notes: string[] = [];
  let out = v;
  if (integerFields.has(field) && !Number.isInteger(out)) {
    const rounded = Math.sign(out) * Math.round(Math.abs(out));
    notes.push(`${field} ${v} is not a whole number; rounded to ${rounded}`);
    out = rounded;
  }
  const clamped = Math.min(r.max, Math.max(r.min, out));
  if (clamped !== out) {
    notes.push(`${field} ${out} is outside the range ${r.min} to ${r.max}; clamped to ${clamped}`);
    out = clamped;
  }
  return notes.length ? { value: out, note: notes.join("; ") } : { value: out };
}

/** What normalization changes in `spec` of `kind` (the spec itself is not modified). */
export function normalizeSpec(kind: Kind | string, spec: any): Clamp[] {
  if (kind !== "MemoryConfig" || !spec || typeof spec !== "object") return [];
  const out: Clamp[] = [];
  for (const field of Object.keys(memoryRanges) as (keyof typeof memoryRanges)[]) {
    const v = spec[field];
    if (typeof v !== "number" || !Number.isFinite(v)) continue;
    const n = normalizeMemoryValue(field, v);
    if (n.note) out.push({ path: `/spec/${field}`, message: n.note });
  }
  return out;
}
