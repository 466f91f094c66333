// Documents out: the store's desired state as manifests, without secrets.
//
// Decision: secret fields keep `env:NAME` / `file:/path` references (they name where a secret
// lives; they are not secrets) and drop every other value, so an ApiKey is exported without
// its `secretHash`. Such an ApiKey does not load back as it is (secretHash is required): the
// YAML form says so in a comment above the document; set it with `svc keys generate`.
//
// Export survives any stored value: a value nested deeper than MAX_JSON_DEPTH (an older version
// accepted such metadata) or one JSON cannot hold is replaced by a note string and reported in a
// comment; a document that still cannot be written becomes a comment naming it.
import { stringify } from "yaml";
import { MAX_JSON_DEPTH } from "./json-depth";
import { API_VERSION, isKind, secretFields, type Kind } from "../schemas";
import type { ResourceStore, StoredObject } from "../prisma/resource-store";
import { isSecretRef, joinPointer, splitPointer } from "./pointer";
import { API_OWNER } from "./owner";
import { withoutDefaults } from "./defaults";

export interface ExportOptions {
  format: "yaml" | "json";
  /** include objects made through the HTTP API (owner "api"); default false */
  includeApiOwned?: boolean;
  /** also write fields whose value is the schema's default (default false: only what was set) */
  showDefaults?: boolean;
}

interface ExportedDoc {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; owner?: string };
  spec: unknown;
}

export function exportObjects(store: ResourceStore, opts: ExportOptions): string {
  const objs = store.list().filter((o) => opts.includeApiOwned || o.owner !== API_OWNER);
  objs.sort((a, b) => (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const docs = objs.map((o) => toDocument(o, !!opts.showDefaults));
  if (opts.format === "json") return JSON.stringify(docs.map((d) => d.doc), null, 2) + "\n";
  return docs
    .map((d) => {
      const head =
        d.dropped.map((p) => `# ${p} omitted (secret); set it before applying this document\n`).join("") +
        d.replaced.map((r) => `# ${r} replaced: the stored value cannot be exported\n`).join("");
      try {
        return head + stringify(d.doc, { lineWidth: 0 });
      } catch (e) {
        return `# ${d.doc.kind}/${d.doc.metadata.name} could not be exported: ${String((e as Error)?.message ?? e).slice(0, 200)}\n`;
      }
    })
    .join("---\n");
}

function toDocument(o: StoredObject, showDefaults: boolean): { doc: ExportedDoc; dropped: string[]; replaced: string[] } {
  const dropped: string[] = [];
  const replaced: string[] = [];
  const full = exportable(o.spec, "/spec", 1, replaced);
  const spec = stripSecrets(o.kind, showDefaults || !isKind(o.kind) ? full : withoutDefaults(o.kind, full), dropped);
  const metadata: ExportedDoc["metadata"] = { name: o.name };
  if (o.labels && Object.keys(o.labels).length) metadata.labels = exportable({ ...o.labels }, "/metadata/labels", 1, replaced) as Record<string, string>;
  // the owner goes with the document, so applying the export back changes no ownership
  metadata.owner = o.owner;
  return { doc: { apiVersion: API_VERSION, kind: o.kind, metadata, spec }, dropped, replaced };
}

/** A copy of a stored value that any writer can serialize: nesting beyond MAX_JSON_DEPTH and
 * values JSON has no form for (bigint, functions, symbols, non-finite numbers) become a note
 * string, listed in `replaced` by JSON pointer. Recursion is bounded by the depth limit. */
function exportable(v: unknown, path: string, depth: number, replaced: string[]): unknown {
  if (v === null || typeof v === "string" || typeof v === "boolean") return v;
  if (typeof v === "number") {
    if (Number.isFinite(v)) return v;
  } else if (typeof v === "object") {
    if (depth > MAX_JSON_DEPTH) {
      replaced.push(path);
      return `[omitted: nested deeper than ${MAX_JSON_DEPTH} levels]`;
    }
    if (Array.isArray(v)) return v.map((x, i) => exportable(x, joinPointer(path, String(i)), depth + 1, replaced));
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) if (x !== undefined) out[k] = exportable(x, joinPointer(path, k), depth + 1, replaced);
    return out;
  } else if (v === undefined) return null;
  replaced.push(path);
  return `[omitted: a ${typeof v} value]`;
}

/** Remove from `spec` every value at or below a secret field that is not a reference. */
function stripSecrets(kind: string, spec: any, dropped: string[]): any {
  for (const ptr of secretFields[kind as Kind] ?? []) {
    const segs = splitPointer(ptr);
    const last = segs.pop()!;
    let parent: any = spec;
    for (const s of segs) parent = parent && typeof parent === "object" ? parent[s] : undefined;
    if (!parent || typeof parent !== "object" || !(last in parent)) continue;
    const kept = keepRefs(parent[last], `/spec${ptr}`, dropped);
    if (kept === undefined) delete parent[last];
    else parent[last] = kept;
  }
  return spec;
}

function keepRefs(v: unknown, path: string, dropped: string[]): unknown {
  if (isSecretRef(v)) return v;
  if (v !== null && typeof v === "object" && !Array.isArray(v)) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      const kept = keepRefs(x, joinPointer(path, k), dropped);
      if (kept !== undefined) out[k] = kept;
    }
    return out;
  }
  dropped.push(path);
  return undefined;
}
