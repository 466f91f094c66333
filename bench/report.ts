// Collects benchmark sections and writes one Markdown report (and JSON) per run.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

export interface Section {
  title: string;
  /** Markdown body: tables and notes */
  body: string;
  data: Record<string, unknown>;
}

export function table(head: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.join(" | ")} |`;
  return [line(head), line(head.map(() => "---")), ...rows.map(line)].join("\n");
}

export const ms = (x: number) => `${x.toFixed(x < 10 ? 2 : 0)} ms`;

export function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

/** The nearest-rank percentile of values already sorted ascending; 0 when there are none
 * (bench/load.ts's latencies, and phases pooled from several of its runs). */
export function sortedPercentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** Write this run's sections into latest.md / latest.json. A run of some sections (`npm run bench
 * -- gateway`) replaces those sections and keeps the others from earlier runs; each section says
 * when and where it was measured. */
export function writeReport(dir: string, sections: Section[]): string {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, "latest.md");
  const jsonFile = path.join(dir, "latest.json");
  const run =
    `Run ${new Date().toISOString()} on ${os.cpus().length} cores (${os.cpus()[0]?.model ?? "cpu"}), ` +
    `${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}.`;
  const kept = new Map<string, string>(); // title -> body, in the old report's order
  if (existsSync(file)) {
    for (const part of readFileSync(file, "utf8").split(/^## /m).slice(1)) {
      const nl = part.indexOf("\n");
      kept.set(part.slice(0, nl).trim(), part.slice(nl + 1).trim());
    }
  }
  for (const s of sections) kept.set(s.title, `${run}\n\n${s.body.trim()}`);
  const header = "# svc benchmark report\n\nEach section says when and where it was measured. Ratios come from one run on one machine; absolute figures vary with load.\n";
  writeFileSync(file, header + [...kept].map(([title, body]) => `\n## ${title}\n\n${body}\n`).join(""));
  let data: Record<string, unknown> = {};
  try {
    data = existsSync(jsonFile) ? JSON.parse(readFileSync(jsonFile, "utf8")) : {};
  } catch {
    data = {}; // an unreadable old report is replaced
  }
  for (const s of sections) data[s.title] = s.data;
  writeFileSync(jsonFile, JSON.stringify(data, null, 2) + "\n");
  return file;
}
