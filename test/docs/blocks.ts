// The fenced code blocks of the README and docs/, with the doctest marker written just above a
// block (`<!-- doctest: … -->`): `background wait=URL` runs it in the background and waits for
// the URL to answer, `expect="text"` requires the text in its output, `skip (why)` and
// `fragment (why)` exclude it from running or validation, with the reason for a reader.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { repoRoot } from "../helpers/cli";

export interface Block {
  file: string; // relative to the repository root
  line: number; // of the opening fence
  lang: string;
  code: string;
  marker: { background?: string; expect?: string; skip?: string; fragment?: string };
}

const MARKER = /^<!--\s*doctest:\s*(.*?)\s*-->\s*$/;

function parseMarker(text: string): Block["marker"] {
  const m: Block["marker"] = {};
  const bg = /^background\s+wait=(\S+)/.exec(text);
  if (bg) m.background = bg[1];
  const ex = /expect="((?:[^"\\]|\\.)*)"/.exec(text);
  if (ex) m.expect = ex[1].replace(/\\"/g, '"');
  const sk = /^skip\b\s*(.*)$/.exec(text);
  if (sk) m.skip = sk[1] || "skipped";
  const fr = /^fragment\b\s*(.*)$/.exec(text);
  if (fr) m.fragment = fr[1] || "a fragment";
  if (!bg && !ex && !sk && !fr) throw new Error(`unknown doctest marker: ${text}`);
  return m;
}

export function blocksOf(file: string): Block[] {
  const lines = readFileSync(path.join(repoRoot, file), "utf8").split("\n");
  const out: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*$/.exec(lines[i]);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]); i++) body.push(lines[i]);
    const above = start > 0 ? MARKER.exec(lines[start - 1]) : null;
    out.push({ file, line: start + 1, lang: open[1] || "text", code: body.join("\n") + "\n", marker: above ? parseMarker(above[1]) : {} });
  }
  return out;
}

/** README.md, then every page of docs/ in name order. */
export function docFiles(): string[] {
  const pages = readdirSync(path.join(repoRoot, "docs")).filter((f) => f.endsWith(".md")).sort();
  return ["README.md", ...pages.map((f) => `docs/${f}`)];
}
