// Documents in: parse YAML (or JSON), validate every document against its kind's schema,
// fill defaults, normalize, and check across documents. Bad input never throws: it becomes
// issues with file:line:col and a JSON pointer. Callers refuse to plan when any issue is an error.
import { readdir, readFile, stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { API_VERSION, isKind, kinds, singletonKinds, type Kind } from "../schemas";
import type { DesiredObject, ManifestIssue, SourcePos } from "./types";
import { ManifestError } from "./errors";
import { validateDocument } from "./validate";
import { normalizeSpec } from "./normalize";
import { parseDocuments, type RawDoc } from "./parse-yaml";

export interface LoadResult {
  objects: DesiredObject[];
  /** errors and warnings (e.g. clamped values) */
  issues: ManifestIssue[];
}

/** kind/name/position of every document that names a known kind, valid or not (for duplicate checks). */
interface Identity {
  kind: string;
  name: string;
  pos: SourcePos;
  /** position of metadata.name, computed only when a message needs it */
  namePos: () => SourcePos;
  obj?: DesiredObject;
}

interface Parsed extends LoadResult {
  ids: Identity[];
}

const MANIFEST_FILE = /\.(ya?ml|json)$/i;

/** Parse and validate one text (multi-document YAML, a JSON object, or a JSON array of objects). */
export function loadText(text: string, file: string): LoadResult {
  const r = parseText(text, file);
  const issues = [...r.issues, ...crossCheck(r.ids)];
  return { objects: r.ids.flatMap((i) => (i.obj ? [i.obj] : [])), issues };
}

/**
 * Load files, folders (recursively: *.yaml, *.yml, *.json, sorted by path; dot-entries skipped)
 * and "-" (stdin: `opts.stdin`, or read from process.stdin). Checks run across all of them.
 */
export async function loadPaths(paths: string[], opts: { stdin?: string } = {}): Promise<LoadResult> {
  const ids: Identity[] = [];
  const issues: ManifestIssue[] = [];
  const seen = new Set<string>();
  const add = (r: Parsed) => {
    ids.push(...r.ids);
    issues.push(...r.issues);
  };
  for (const p of paths) {
    if (p === "-") {
      add(parseText(opts.stdin ?? (await readStdin()), "<stdin>"));
      continue;
    }
    let files: string[];
    try {
      const st = await stat(p);
      files = st.isDirectory() ? await listManifestFiles(p) : [p];
      if (st.isDirectory() && files.length === 0) {
        issues.push({ severity: "warning", path: "", message: `no *.yaml, *.yml or *.json files found in ${p}`, pos: { file: p, line: 1, column: 1 } });
      }
    } catch (e: any) {
      issues.push({ severity: "error", path: "", message: `cannot read ${p}: ${e?.code ?? e?.message ?? e}`, pos: { file: p, line: 1, column: 1 } });
      continue;
    }
    for (const f of files) {
      const abs = resolve(f);
      if (seen.has(abs)) continue;
      seen.add(abs);
      let text: string;
      try {
        text = await readFile(f, "utf8");
      } catch (e: any) {
        issues.push({ severity: "error", path: "", message: `cannot read ${f}: ${e?.code ?? e?.message ?? e}`, pos: { file: f, line: 1, column: 1 } });
        continue;
      }
      add(parseText(text, f));
    }
  }
  issues.push(...crossCheck(ids));
  return { objects: ids.flatMap((i) => (i.obj ? [i.obj] : [])), issues };
}

/** The objects, or ManifestError listing every problem when any issue is an error. */
export function assertValid(r: LoadResult): DesiredObject[] {
  if (r.issues.some((i) => i.severity === "error")) throw new ManifestError(r.issues);
  return r.objects;
}

async function listManifestFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string) => {
    const entries = await readdir(d, { withFileTypes: true });
    for (const e of entries) {
      if (e.name.startsWith(".")) continue;
      const full = join(d, e.name);
      if (e.isDirectory()) await walk(full);
      else if (e.isFile() && MANIFEST_FILE.test(e.name)) out.push(full);
    }
  };
  await walk(dir);
  return out.sort();
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(typeof c === "string" ? Buffer.from(c) : c);
  return Buffer.concat(chunks).toString("utf8");
}

/** One text, without the cross-document checks. */
function parseText(text: string, file: string): Parsed {
  const ids: Identity[] = [];
  const { docs, issues } = parseDocuments(text, file);
  for (const d of docs) checkDocument(d, ids, issues);
  return { objects: [], issues, ids };
}

const describe = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "a list" : typeof v === "object" ? "a mapping" : JSON.stringify(v));

function checkDocument(d: RawDoc, ids: Identity[], issues: ManifestIssue[]): void {
  const { value, pos: docPos } = d;
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    issues.push({ severity: "error", path: "", message: `a document must be a mapping with apiVersion, kind, metadata and spec (got ${describe(value)})`, pos: docPos });
    return;
  }
  const v = value as Record<string, any>;
  const name = typeof v.metadata?.name === "string" ? v.metadata.name : undefined;
  const kindVal = v.kind;
  const at = (path: string, atKey = false) => d.locate(path, atKey);
  const before = issues.length;
  const issue = (path: string, message: string, atKey = false) =>
    issues.push({ severity: "error", path, message, pos: at(path, atKey), ...(typeof kindVal === "string" ? { kind: kindVal } : {}), ...(name ? { name } : {}) });

  if (v.apiVersion !== API_VERSION) {
    issue("/apiVersion", v.apiVersion === undefined ? `missing required field "apiVersion" (must be "${API_VERSION}")` : `must be "${API_VERSION}" (got ${describe(v.apiVersion)})`);
  }
  const id: Identity | undefined = typeof kindVal === "string" && name ? { kind: kindVal, name, pos: docPos, namePos: () => at("/metadata/name") } : undefined;
  if (id) ids.push(id);
  if (!isKind(kindVal)) {
    issue("/kind", kindVal === undefined ? `missing required field "kind" (known kinds: ${kinds.join(", ")})` : `unknown kind ${describe(kindVal)}; known kinds: ${kinds.join(", ")}`);
    return;
  }
  for (const p of validateDocument(kindVal, v)) {
    if (p.path === "/apiVersion") continue; // reported above, in words
    issue(p.path, p.message, p.atKey);
  }
  if (issues.length > before) {
    sortByPos(issues, before);
    return;
  }

  const spec = v.spec;
  for (const c of normalizeSpec(kindVal, spec)) {
    issues.push({ severity: "warning", path: c.path, message: c.message, pos: at(c.path), kind: kindVal, name });
  }
  id!.obj = { kind: kindVal, name: name!, labels: { ...(v.metadata.labels ?? {}) }, spec, pos: docPos, ...(v.metadata.owner ? { owner: v.metadata.owner } : {}) };
}

function sortByPos(issues: ManifestIssue[], from: number): void {
  const part = issues.splice(from).sort((a, b) => (a.pos?.line ?? 0) - (b.pos?.line ?? 0) || (a.pos?.column ?? 0) - (b.pos?.column ?? 0));
  issues.push(...part);
}

/**
 * Checks across every loaded document: duplicate kind/name (valid or not), more than one object
 * of a singleton kind. Duplicates lose their object so the rest of the result stays consistent.
 */
function crossCheck(ids: Identity[]): ManifestIssue[] {
  const issues: ManifestIssue[] = [];
  const byKey = new Map<string, Identity>();
  const singletons = new Map<string, Identity>();
  const where = (o: Identity) => `${o.pos.file}:${o.pos.line}:${o.pos.column}`;
  for (const o of ids) {
    const key = `${o.kind}/${o.name}`;
    const first = byKey.get(key);
    if (first) {
      issues.push({ severity: "error", path: "/metadata/name", message: `duplicate ${key}: declared at ${where(first)} and again at ${where(o)}`, pos: o.namePos(), kind: o.kind, name: o.name });
      o.obj = undefined;
      continue;
    }
    byKey.set(key, o);
    if (singletonKinds.has(o.kind as Kind)) {
      const other = singletons.get(o.kind);
      if (other) {
        issues.push({
          severity: "error",
          path: "/metadata/name",
          message: `${o.kind} is a singleton: only one may be declared, but ${o.kind}/${other.name} is declared at ${where(other)} and ${o.kind}/${o.name} at ${where(o)}`,
          pos: o.namePos(),
          kind: o.kind,
          name: o.name,
        });
        o.obj = undefined;
        continue;
      }
      singletons.set(o.kind, o);
    }
  }
  return issues;
}
