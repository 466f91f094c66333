// `svc usage`: GET /v1/usage of the running server as an aligned table or CSV. The key is
// SVC_API_KEY when set (the report then shows what that key may see), else the administrative key.
import { readFileSync, existsSync } from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import { resolveTarget, probe } from "./connect";
import { CliError } from "./errors";
import { displayWidth, outputFormat, padEndCols, padStartCols, printData, withOutputOption } from "./print";
import { usageCell, usageColumns, type UsageGroup, type UsageRow } from "../engines/gateway/usage-report";

interface UsageOptions {
  port?: string;
  home?: string;
  groupBy: string;
  from?: string;
  to?: string;
  key?: string;
  team?: string;
  org?: string;
  model?: string;
  provider?: string;
  workflow?: string;
  user?: string;
  csv?: boolean;
  json?: boolean;
  output?: string;
}

function keyFor(home: string): string {
  const k = process.env.SVC_API_KEY?.trim() || process.env.SVC_ADMIN_KEY?.trim();
  if (k) return k;
  const f = path.join(home, "admin.key");
  if (existsSync(f)) return readFileSync(f, "utf8").trim();
  throw new CliError(`no key: set SVC_API_KEY (or SVC_ADMIN_KEY), or start svc once (it writes ${f})`);
}

/** Columns padded to their widest cell; numbers right-aligned. */
export function table(rows: UsageRow[], groupBy: UsageGroup[]): string {
  const cols = usageColumns(groupBy);
  const cells = [cols.map((c) => c.toUpperCase()), ...rows.map((r) => cols.map((c) => usageCell(r, c)))];
  // widths in terminal columns (a key or model name in CJK or with an emoji is wider than its .length)
  const width = cols.map((_, i) => Math.max(...cells.map((row) => displayWidth(row[i]))));
  const numeric = cols.map((c) => rows.length > 0 && rows.every((r) => typeof r[c] === "number" || r[c] === null));
  return cells.map((row) => row.map((v, i) => (numeric[i] ? padStartCols(v, width[i]) : padEndCols(v, width[i]))).join("  ").trimEnd()).join("\n") + "\n";
}

export function registerUsage(program: Command): void {
  const cmd = program
    .command("usage")
    .description("requests, tokens, spend, errors, refusals and latency from the running server's audit log (GET /v1/usage)")
    .option("--group-by <fields>", "comma-separated: key team organization model provider day hour metadata.workflow_id metadata.user_id", "key")
    .option("--from <time>", "from this ISO 8601 date or time (inclusive)")
    .option("--to <time>", "to this ISO 8601 date or time (exclusive)")
    .option("--key <id>", "only this key")
    .option("--team <id>", "only keys of this team")
    .option("--org <id>", "only this organization")
    .option("--model <name>", "only this model")
    .option("--provider <name>", "only this provider")
    .option("--workflow <id>", "only requests with this metadata.workflow_id")
    .option("--user <id>", "only requests with this metadata.user_id")
    .option("--csv", "print CSV (the same as -o csv)")
    .option("--port <port>", "server port")
    .option("--home <dir>", "data dir");
  withOutputOption(cmd, ["csv"]).action(async (o: UsageOptions) => {
      const format = outputFormat(o, ["csv"] as const);
      if (format === "csv") o.csv = true;
      const q = new URLSearchParams({ group_by: o.groupBy });
      const add = (name: string, v: string | undefined) => v !== undefined && q.set(name, v);
      add("from", o.from);
      add("to", o.to);
      add("key_id", o.key);
      add("team_id", o.team);
      add("organization_id", o.org);
      add("model", o.model);
      add("provider", o.provider);
      add("metadata.workflow_id", o.workflow);
      add("metadata.user_id", o.user);
      if (o.csv) q.set("format", "csv");
      const t = await resolveTarget(o);
      const pr = await probe(t.base);
      if (!pr.ok) throw new CliError(`no svc answers at ${t.base} (${pr.error}); start it with \`svc serve\``);
      const res = await fetch(`${t.base}/v1/usage?${q}`, { headers: { authorization: `Bearer ${keyFor(t.home)}` } });
      if (o.csv && res.ok) {
        process.stdout.write(await res.text());
        return;
      }
      const j: any = await res.json().catch(() => null);
      if (!res.ok) throw new CliError(j?.error?.message ?? `svc answered HTTP ${res.status}`);
      if (await printData(format, j)) return;
      if (j.data.length === 0) process.stdout.write("no usage in this range\n");
      else process.stdout.write(table(j.data, j.group_by));
    });
}
