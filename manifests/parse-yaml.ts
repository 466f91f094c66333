// YAML (and JSON) text -> plain documents that remember where they came from.
//
// Speed: the `yaml` parser costs ~0.1 ms per small document, most of a 10k-object load. The
// text is cut at `---` lines into one chunk per document and each chunk's parsed value is kept
// in a bounded cache keyed by the chunk's text, so re-loading an unchanged (or mostly unchanged)
// manifest set — watch mode, a no-op re-plan — parses only what changed. Positions are kept
// relative to the chunk; nodes for error positions are re-parsed only when a message needs one.
// A chunk is first read with js-yaml (about ten times faster); only a chunk js-yaml refuses, or
// one that is not a single plain mapping, goes through `yaml`, which reports exact positions.
import jsyaml from "js-yaml";
import { isScalar, isSeq, LineCounter, parseAllDocuments, type Document, type Node } from "yaml";
import type { ManifestIssue, SourcePos } from "./types";
import { locateNode } from "./yaml-locate";

export interface RawDoc {
  /** the document's value: a fresh copy the caller may change */
  value: unknown;
  /** where the document starts */
  pos: SourcePos;
  /** position of the node at `path` (or of its deepest existing parent; of the key with atKey) */
  locate(path: string, atKey?: boolean): SourcePos;
}

interface Root {
  value: unknown;
  line: number; // 1-based, relative to the chunk
  col: number;
}
interface ChunkEntry {
  roots: Root[];
}

const CACHE_MAX_CHARS = 16 * 1024 * 1024; // of source text; parsed values take a few times that
const cache = new Map<string, ChunkEntry>();
let cacheChars = 0;

function remember(src: string, e: ChunkEntry): void {
  if (src.length > CACHE_MAX_CHARS / 4) return;
  cache.set(src, e);
  cacheChars += src.length;
  for (const k of cache.keys()) {
    if (cacheChars <= CACHE_MAX_CHARS) break;
    cache.delete(k);
    cacheChars -= k.length;
  }
}

/** Every non-empty document of `text` (a JSON array counts as one document per item), or issues. */
export function parseDocuments(text: string, file: string): { docs: RawDoc[]; issues: ManifestIssue[] } {
  const docs: RawDoc[] = [];
  const issues: ManifestIssue[] = [];
  for (const c of splitChunks(text)) parseChunk(c.src, c.line0, file, docs, issues);
  return { docs, issues };
}

/**
 * Cut at lines that start a document (`---`). A `---` at column 0 ends any YAML node, so each
 * chunk parses alone exactly as it does in the stream. Texts with directives (`%`) or
 * document-end markers (`...`) are left whole.
 */
function splitChunks(text: string): { src: string; line0: number }[] {
  if (/^(%|\.\.\.)/m.test(text)) return [{ src: text, line0: 0 }];
  const out: { src: string; line0: number }[] = [];
  const re = /^---(?=[ \t\r\n]|$)/gm;
  let start = 0;
  let line0 = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text))) {
    if (m.index === start) continue;
    const src = text.slice(start, m.index);
    out.push({ src, line0 });
    line0 += countNewlines(src);
    start = m.index;
  }
  out.push({ src: text.slice(start), line0 });
  return out;
}

function countNewlines(s: string): number {
  let n = 0;
  for (let i = s.indexOf("\n"); i !== -1; i = s.indexOf("\n", i + 1)) n++;
  return n;
}

interface ParsedRoot {
  doc: Document;
  node: Node;
}

/** The documents' root nodes (items of a top-level sequence count as roots) of error-free documents. */
function rootsOf(docs: Document.Parsed[]): { roots: ParsedRoot[]; withValue: Document.Parsed[] } {
  const roots: ParsedRoot[] = [];
  const withValue: Document.Parsed[] = [];
  for (const doc of docs) {
    if (doc.errors.length > 0) continue;
    const node = doc.contents as Node | null;
    if (node == null || (isScalar(node) && node.value == null)) continue; // empty document
    withValue.push(doc);
    if (isSeq(node)) for (const item of node.items) roots.push({ doc, node: item as Node });
    else roots.push({ doc, node });
  }
  return { roots, withValue };
}

function parseChunk(src: string, line0: number, file: string, out: RawDoc[], issues: ManifestIssue[]): void {
  const shift = (line: number, col: number): SourcePos => ({ file, line: line0 + line, column: col });
  let reparsed: { roots: ParsedRoot[]; lc: LineCounter } | undefined;
  const nodes = () => {
    if (!reparsed) {
      const lc = new LineCounter();
      reparsed = { roots: rootsOf(parseAllDocuments(src, { lineCounter: lc }) as Document.Parsed[]).roots, lc };
    }
    return reparsed;
  };
  const locator = (i: number) => (path: string, atKey = false): SourcePos => {
    const { roots, lc } = nodes();
    const r = roots[i];
    const node = r ? locateNode(r.doc, r.node, path, atKey) : undefined;
    const { line, col } = lc.linePos(node?.range?.[0] ?? 0);
    return shift(line, col);
  };

  const hit = cache.get(src);
  if (hit) {
    cache.delete(src); // keep recently used entries last
    cache.set(src, hit);
    hit.roots.forEach((r, i) => out.push({ value: structuredClone(r.value), pos: shift(r.line, r.col), locate: locator(i) }));
    return;
  }

  if (fastChunk(src, shift, locator, out)) return;

  const lc = new LineCounter();
  let parsed: Document.Parsed[];
  try {
    parsed = parseAllDocuments(src, { lineCounter: lc, prettyErrors: true }) as Document.Parsed[];
  } catch (e: any) {
    issues.push({ severity: "error", path: "", message: `YAML: ${e?.message ?? e}`, pos: shift(1, 1) });
    return;
  }
  reparsed = { roots: [], lc };
  let cacheable = true;
  const entry: ChunkEntry = { roots: [] };
  for (const doc of parsed) {
    // one mistake often yields several errors at the same place: report each line once
    const seen = new Set<number>();
    for (const e of doc.errors) {
      const i = yamlIssue("error", e, lc, shift, src);
      if (seen.has(i.pos!.line)) continue;
      seen.add(i.pos!.line);
      issues.push(i);
    }
    for (const w of doc.warnings) issues.push(yamlIssue("warning", w, lc, shift, src));
    if (doc.errors.length || doc.warnings.length) cacheable = false;
  }
  const { roots, withValue } = rootsOf(parsed);
  reparsed.roots = roots;
  let i = 0;
  for (const doc of withValue) {
    const node = doc.contents as Node;
    const n = isSeq(node) ? node.items.length : 1;
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: 1000 });
    } catch (e: any) {
      const { line, col } = lc.linePos(node.range?.[0] ?? 0);
      issues.push({ severity: "error", path: "", message: `cannot read document: ${e?.message ?? e}`, pos: shift(line, col) });
      cacheable = false;
      i += n;
      continue;
    }
    const values = isSeq(node) && Array.isArray(value) ? value : [value];
    for (let k = 0; k < n; k++, i++) {
      const { line, col } = lc.linePos(roots[i].node.range?.[0] ?? 0);
      entry.roots.push({ value: values[k], line, col });
      out.push({ value: cacheable ? structuredClone(values[k]) : values[k], pos: shift(line, col), locate: locator(i) });
    }
  }
  if (cacheable) remember(src, entry);
}

/**
 * The fast path: a chunk holding one mapping document that js-yaml reads without complaint.
 * CORE_SCHEMA matches `yaml`'s YAML 1.2 core schema (no timestamps, no merge keys), and
 * js-yaml refuses duplicate keys, so anything it accepts here `yaml` reads the same way.
 */
function fastChunk(
  src: string,
  shift: (line: number, col: number) => SourcePos,
  locator: (i: number) => (path: string, atKey?: boolean) => SourcePos,
  out: RawDoc[],
): boolean {
  let docs: unknown[];
  try {
    docs = jsyaml.loadAll(src, undefined, { schema: jsyaml.CORE_SCHEMA }) as unknown[];
  } catch {
    return false;
  }
  const values = docs.filter((d) => d != null);
  if (values.length !== 1 || typeof values[0] !== "object" || Array.isArray(values[0])) return false;
  const start = rootStart(src);
  if (!start) return false;
  remember(src, { roots: [{ value: values[0], line: start.line, col: start.col }] });
  out.push({ value: structuredClone(values[0]), pos: shift(start.line, start.col), locate: locator(0) });
  return true;
}

/** Line and column (1-based) where a block or flow mapping's first key starts. */
function rootStart(src: string): { line: number; col: number } | undefined {
  const lines = src.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i].replace(/\r$/, "");
    const body = i === 0 || /^---/.test(text) ? text.replace(/^---(?=[ \t]|$)[ \t]*/, "") : text;
    const lead = text.length - body.length;
    const trimmed = body.trimStart();
    if (trimmed === "" || trimmed.startsWith("#")) continue;
    return { line: i + 1, col: lead + (body.length - trimmed.length) + 1 };
  }
  return undefined;
}

function yamlIssue(
  severity: "error" | "warning",
  e: { code?: string; message: string; linePos?: [{ line: number; col: number }, ...unknown[]]; pos: [number, number] },
  lc: LineCounter,
  shift: (line: number, col: number) => SourcePos,
  src: string,
): ManifestIssue {
  // A key indented too deep (`key: value` under `other: value`) reads as a multi-line implicit
  // key that starts on the line above; the mistake is on the line where that range ends.
  const bad = e.code === "MULTILINE_IMPLICIT_KEY" || e.code === "BLOCK_AS_IMPLICIT_KEY";
  const end = bad ? mistakenLine(src, lc, e.pos) : undefined;
  if (end) return { severity, path: "", message: "YAML: bad indentation: this line is indented deeper than the key above it, so it cannot start a new key; align it with its sibling keys", pos: shift(end.line, end.col) };
  const lp = e.linePos?.[0] ?? lc.linePos(e.pos[0]);
  const first = e.message.split("\n")[0].replace(/ at line \d+, column \d+:?$/, "");
  return { severity, path: "", message: `YAML: ${first}`, pos: shift(lp.line, lp.col) };
}

/** The first line after the error's start line that holds a `key:` (the over-indented one). */
function mistakenLine(src: string, lc: LineCounter, pos: [number, number]): { line: number; col: number } | undefined {
  const start = lc.linePos(pos[0]).line;
  const lines = src.split("\n");
  for (let i = start; i < lines.length; i++) {
    const t = lines[i].replace(/\r$/, "");
    if (/^\s*[^\s#][^:#]*:(\s|$)/.test(t)) return { line: i + 1, col: t.length - t.trimStart().length + 1 };
    if (t.trim() !== "" && !t.trim().startsWith("#")) return undefined;
  }
  return undefined;
}
