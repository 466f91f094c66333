// Bounds on JSON request bodies, checked once in readJson (api/body.ts) for every route that
// reads a body: nesting depth (deep values crash JSON.stringify, YAML and ajv with a stack
// overflow, a 500) and the size of free-form `metadata` objects (stored with keys and audit
// rows). A body past a bound is a 400 invalid_request whose `param` names the top-level field.
import { invalidRequest } from "../engines/errors";
import { MAX_JSON_DEPTH, nestsDeeper } from "../manifests/json-depth";

export { MAX_JSON_DEPTH };
/** `metadata` objects: at most this many bytes as JSON. */
export const MAX_METADATA_BYTES = 16 * 1024;

/** Throws 400 when a field of `body` nests deeper than MAX_JSON_DEPTH levels (the body itself is
 * level 1) or a `metadata` object is larger than MAX_METADATA_BYTES. A walk over the parsed
 * value without allocation; the metadata size is measured only when metadata is present. */
export function checkJsonBounds(body: Record<string, unknown>): void {
  for (const k in body) {
    const v = body[k];
    if (v === null || typeof v !== "object") continue;
    if (nestsDeeper(v, MAX_JSON_DEPTH, 2)) {
      throw invalidRequest(`${k} nests deeper than ${MAX_JSON_DEPTH} levels of objects and arrays`, k);
    }
    if (k === "metadata" && Buffer.byteLength(JSON.stringify(v)) > MAX_METADATA_BYTES) {
      throw invalidRequest(`metadata is larger than ${MAX_METADATA_BYTES} bytes as JSON`, k);
    }
  }
}
