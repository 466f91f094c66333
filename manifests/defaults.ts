// Which fields of a stored spec the user set: the store keeps specs with the schema's defaults
// filled in (validation fills them), so an export would otherwise write every default (a router
// Model would get a local model's contextSize, threads, ...). A field is a default when removing
// it and filling defaults again gives back the same spec: exactly what makes an export plan as
// "no change". Specs are small (tens of fields), so trying each field is cheap.
import type { Kind } from "../schemas";
import { validateDocument } from "./validate";
import { deepEqual } from "./diff";

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/** `spec` without the fields that filling defaults would put back (a copy; `spec` is unchanged). */
export function withoutDefaults(kind: Kind, spec: unknown): unknown {
  if (!isObject(spec)) return spec;
  const target = fill(kind, spec);
  // a spec that does not validate as stored (an older version wrote it) is exported as it is
  if (!target || !deepEqual(target, spec)) return spec;
  const out = structuredClone(spec);
  prune(kind, out, out, target);
  return out;
}

/** Try removing each field of `node` (inside `root`), deepest objects after their parent. */
function prune(kind: Kind, root: Record<string, unknown>, node: Record<string, unknown>, target: unknown): void {
  for (const k of Object.keys(node)) {
    const v = node[k];
    delete node[k];
    const filled = fill(kind, root);
    if (filled && deepEqual(filled, target)) continue; // a default: leave it out
    node[k] = v;
    if (isObject(v)) prune(kind, root, v, target);
  }
}

function fill(kind: Kind, spec: Record<string, unknown>): unknown {
  const doc = { apiVersion: "svc/v1", kind, metadata: { name: "x" }, spec: structuredClone(spec) };
  return validateDocument(kind, doc).length ? undefined : doc.spec;
}
