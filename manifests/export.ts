// Documents out: the store's desired state as manifests, without secrets.
//
// Decision: secret fields keep `env:NAME` / `file:/path` references (they name where a secret
// lives; they are not secrets) and drop every other value, so an ApiKey is exported without
// its `secretHash`. Such an ApiKey does not load back as it is (secretHash is required): the
// YAML form says so in a comment above the document; set it with `svc keys generate`.
import { stringify } from "yaml";
import { API_VERSION, secretFields, type Kind } from "../schemas";
import type { ResourceStore, StoredObject } from "../prisma/resource-store";
import { isSecretRef, joinPointer, splitPointer } from "./pointer";
import { API_OWNER } from "./owner";

export interface ExportOptions {
  format: "yaml" | "json";
  /** include objects made through the HTTP API (owner "api"); default false */
  includeApiOwned?: boolean;
}

interface ExportedDoc {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec: unknown;
}

export function exportObjects(store: ResourceStore, opts: ExportOptions): string {
  const objs = store.list().filter((o) => opts.includeApiOwned || o.owner !== API_OWNER);
  objs.sort((a, b) => (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const docs = objs.map(toDocument);
  if (opts.format === "json") return JSON.stringify(docs.map((d) => d.doc), null, 2) + "\n";
  return docs
    .map((d) => {
      const head = d.dropped.length
        ? d.dropped.map((p) => `# ${p} omitted (secret); set it before applying this document\n`).join("")
        : "";
      return head + stringify(d.doc, { lineWidth: 0 });
    })
    .join("---\n");
}

function toDocument(o: StoredObject): { doc: ExportedDoc; dropped: string[] } {
  const dropped: string[] = [];
  const spec = stripSecrets(o.kind, structuredClone(o.spec), dropped);
  const metadata: ExportedDoc["metadata"] = { name: o.name };
  if (o.labels && Object.keys(o.labels).length) metadata.labels = { ...o.labels };
  return { doc: { apiVersion: API_VERSION, kind: o.kind, metadata, spec }, dropped };
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
