// Human-readable output: plans (+ create, ~ update with field diffs, - delete, summary),
// manifest issues (file:line:col), wait results.
import type { ManifestIssue, Plan, PlannedChange, FieldChange } from "../manifests/types";
import type { WaitResult } from "../controllers/runtime";
import { CliError } from "./errors";

const MAX_VALUE = 100;

function show(v: unknown): string {
  if (v === undefined) return "(none)";
  const s = JSON.stringify(v);
  return s.length > MAX_VALUE ? s.slice(0, MAX_VALUE - 1) + "…" : s;
}

function fieldLine(f: FieldChange, action: PlannedChange["action"]): string {
  if (action === "create") return `      ${f.path}: ${show(f.after)}`;
  if (f.before === undefined) return `      + ${f.path}: ${show(f.after)}`;
  if (f.after === undefined) return `      - ${f.path}: ${show(f.before)}`;
  return `      ~ ${f.path}: ${show(f.before)} -> ${show(f.after)}`;
}

export function formatIssue(i: ManifestIssue): string {
  const where = i.pos ? `${i.pos.file}:${i.pos.line}:${i.pos.column}` : "<input>";
  return `${where}: ${i.path || "/"}: ${i.severity === "warning" ? "warning: " : ""}${i.message}`;
}

export function formatPlan(plan: Plan, opts: { fields?: boolean } = {}): string {
  const out: string[] = [];
  const mark = { create: "+", update: "~", delete: "-", unchanged: "=" } as const;
  for (const c of plan.changes) {
    if (c.action === "unchanged") continue;
    out.push(`  ${mark[c.action]} ${c.action} ${c.kind}/${c.name}${c.highRisk ? `   [high risk: ${c.highRisk}]` : ""}`);
    if (opts.fields !== false && c.action !== "delete") for (const f of c.fields) out.push(fieldLine(f, c.action));
  }
  for (const w of plan.warnings ?? []) out.push(`  warning: ${formatIssue(w).replace(/: warning: /, ": ")}`);
  const s = plan.summary;
  const total = s.create + s.update + s.delete;
  out.push(
    total === 0
      ? `No changes: ${s.unchanged} unchanged (store revision ${plan.revision}, source "${plan.source}").`
      : `Plan: ${s.create} to create, ${s.update} to update, ${s.delete} to delete, ${s.unchanged} unchanged (store revision ${plan.revision}, source "${plan.source}").`,
  );
  return out.join("\n");
}

export function changeCount(plan: Plan): number {
  return plan.summary.create + plan.summary.update + plan.summary.delete;
}

export function formatWait(w: WaitResult): string {
  const out: string[] = [];
  for (const o of w.objects) {
    const what = `${o.kind}/${o.name}${o.generation !== undefined ? ` (generation ${o.generation})` : ""}`;
    if (o.state === "ready") out.push(`  ready    ${what}: ${o.message ?? ""}`);
    else if (o.state === "deleted") out.push(`  deleted  ${what}`);
    else if (o.state === "not-implemented") out.push(`  accepted ${what}: ${o.message ?? ""}`);
    else if (o.state === "failed") out.push(`  failed   ${what}: ${o.reason ?? ""}: ${o.message ?? ""}`, `           fix: ${o.fix ?? ""}`);
    else out.push(`  pending  ${what}: ${o.reason ?? ""} ${o.message ?? ""}`.trimEnd());
  }
  out.push(waitVerdict(w));
  return out.join("\n");
}

function waitVerdict(w: WaitResult): string {
  if (w.ready) return "All objects converged.";
  const failed = w.objects.filter((o) => o.state === "failed");
  if (failed.length) {
    const names = failed.map((o) => `${o.kind}/${o.name} (${o.reason})`).join(", ");
    return `Stopped waiting: ${names} cannot become Ready until the fix above is made; waiting longer would not change it.`;
  }
  const pending = w.objects.filter((o) => o.state === "pending").map((o) => `${o.kind}/${o.name}`);
  if (w.timedOut) {
    const secs = w.timeoutMs !== undefined ? ` after ${Math.round(w.timeoutMs / 100) / 10} s` : "";
    return `Timed out${secs} waiting for ${pending.join(", ") || "the objects"} to be Ready at their new generation (raise --timeout to wait longer).`;
  }
  return "Not every object is Ready.";
}

/** How a listing command prints: a table (default), a wide table, or the data as JSON / YAML. */
export type OutputFormat = "table" | "wide" | "json" | "yaml";

/** -o json|yaml|wide (kubectl's spelling) and --json, kept as its alias. */
export function withOutputOption<T extends { option(flags: string, description: string): T }>(cmd: T, extra: string[] = []): T {
  return cmd
    .option("-o, --output <format>", `output format: ${["table", "wide", "json", "yaml", ...extra].join(", ")}`)
    .option("--json", "print JSON (the same as -o json)");
}

export function outputFormat<E extends string = never>(o: { output?: string; json?: boolean }, extra: readonly E[] = []): OutputFormat | E {
  if (o.json) return "json";
  const f = (o.output ?? "table").toLowerCase();
  const known: string[] = ["table", "wide", "json", "yaml", ...extra];
  if (!known.includes(f)) throw new CliError(`-o/--output: "${o.output}" is not one of ${known.join(", ")}`);
  return f as OutputFormat | E;
}

/** Print `data` as JSON or YAML; false for the table formats (the caller prints its table). */
export async function printData(format: string, data: unknown): Promise<boolean> {
  if (format === "json") process.stdout.write(JSON.stringify(data, null, 2) + "\n");
  else if (format === "yaml") process.stdout.write((await import("yaml")).stringify(data, { lineWidth: 0 }));
  else return false;
  return true;
}

// Terminal columns, not UTF-16 code units: String.length / padEnd count "日本" as 2 (it takes 4
// columns) and "é" written e + U+0301 as 2 (it takes 1), so a key name or label in CJK, with an
// emoji or a combining accent pushed every later column of its row out of line.
let segmenter: Intl.Segmenter | undefined; // made on first non-ASCII cell (start-up stays light)
const ZERO_WIDTH = /^[\p{Cc}\p{Cf}\p{Mn}\p{Me}]+$/u;
const EMOJI = /\p{Emoji_Presentation}|\p{Extended_Pictographic}\uFE0F/u;

/** East Asian Wide and Fullwidth code points (the ranges terminals draw two columns wide). */
function isWide(cp: number): boolean {
  return (
    (cp >= 0x1100 && cp <= 0x115f) || // Hangul Jamo
    (cp >= 0x2e80 && cp <= 0x303e) || // CJK radicals, Kangxi, ideographic description, CJK symbols and punctuation
    (cp >= 0x3041 && cp <= 0x33ff) || // Hiragana, Katakana, Bopomofo, Hangul compatibility Jamo, CJK compatibility
    (cp >= 0x3400 && cp <= 0x4dbf) || // CJK extension A
    (cp >= 0x4e00 && cp <= 0x9fff) || // CJK unified ideographs
    (cp >= 0xa000 && cp <= 0xa4cf) || // Yi
    (cp >= 0xa960 && cp <= 0xa97f) || // Hangul Jamo extended A
    (cp >= 0xac00 && cp <= 0xd7a3) || // Hangul syllables
    (cp >= 0xf900 && cp <= 0xfaff) || // CJK compatibility ideographs
    (cp >= 0xfe10 && cp <= 0xfe19) || // vertical forms
    (cp >= 0xfe30 && cp <= 0xfe6f) || // CJK compatibility forms, small form variants
    (cp >= 0xff00 && cp <= 0xff60) || // fullwidth forms
    (cp >= 0xffe0 && cp <= 0xffe6) ||
    (cp >= 0x1b000 && cp <= 0x1b2ff) || // Kana supplement and extensions
    (cp >= 0x20000 && cp <= 0x3fffd) // CJK extensions B and later
  );
}

/** How many terminal columns `s` takes. */
export function displayWidth(s: string): number {
  // ASCII (nearly every cell): its length is its width
  if (/^[\x20-\x7e]*$/.test(s)) return s.length;
  let w = 0;
  segmenter ??= new Intl.Segmenter(undefined, { granularity: "grapheme" });
  for (const { segment } of segmenter.segment(s)) {
    if (ZERO_WIDTH.test(segment)) continue;
    w += EMOJI.test(segment) || isWide(segment.codePointAt(0)!) ? 2 : 1;
  }
  return w;
}

/** padEnd / padStart by terminal columns. */
export const padEndCols = (s: string, width: number): string => s + " ".repeat(Math.max(0, width - displayWidth(s)));
export const padStartCols = (s: string, width: number): string => " ".repeat(Math.max(0, width - displayWidth(s))) + s;

/** Columns padded to their widest cell (capped), the last one left free. */
export function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.min(48, Math.max(...rows.map((r) => displayWidth(r[i] ?? "")))));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : padEndCols(c, widths[i]))).join("  ").trimEnd()).join("\n");
}
