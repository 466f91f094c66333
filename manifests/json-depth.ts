// How deep a free-form JSON value may nest. Deeper values crash recursive code (JSON.stringify,
// the YAML writer, ajv) with a stack overflow, so request bodies are refused past this depth
// (api/json-bounds.ts) and export cuts anything deeper that an older version stored.
export const MAX_JSON_DEPTH = 32;

/** Does `v` (an object or array at nesting level `depth`, the body being level 1) nest deeper
 * than `max`? Recursion stops at max, so any input is safe to check. No allocation. */
export function nestsDeeper(v: object, max: number, depth = 1): boolean {
  if (depth > max) return true;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const x = v[i];
      if (x !== null && typeof x === "object" && nestsDeeper(x, max, depth + 1)) return true;
    }
    return false;
  }
  for (const k in v) {
    const x = (v as Record<string, unknown>)[k];
    if (x !== null && typeof x === "object" && nestsDeeper(x, max, depth + 1)) return true;
  }
  return false;
}
