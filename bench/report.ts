// Collects benchmark sections and writes one Markdown report (and JSON) per run.
import { mkdirSync, writeFileSync } from "node:fs";
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

export function writeReport(dir: string, sections: Section[]): string {
  mkdirSync(dir, { recursive: true });
  const header = [
    "# svc benchmark report",
    "",
    `Run ${new Date().toISOString()} on ${os.cpus().length} cores (${os.cpus()[0]?.model ?? "cpu"}), ` +
      `${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}. Ratios come from one run on one machine; ` +
      "absolute figures vary with load.",
    "",
  ].join("\n");
  const md = header + sections.map((s) => `## ${s.title}\n\n${s.body}\n`).join("\n");
  const file = path.join(dir, "latest.md");
  writeFileSync(file, md);
  writeFileSync(path.join(dir, "latest.json"), JSON.stringify(Object.fromEntries(sections.map((s) => [s.title, s.data])), null, 2));
  return file;
}
