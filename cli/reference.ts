// The CLI reference (docs/cli-reference.md), rendered from the commands' own --help so that the
// two cannot disagree: `npm run docs:cli` writes it, and a test fails when it is stale.
import type { Command } from "commander";

const WIDTH = 100; // fixed, so the page does not depend on the terminal that generated it

function walk(cmd: Command, path: string[], out: Array<{ path: string[]; cmd: Command }>): void {
  out.push({ path, cmd });
  for (const sub of cmd.commands) if (!(sub as any)._hidden) walk(sub, [...path, sub.name()], out);
}

export function cliReference(program: Command): string {
  const all: Array<{ path: string[]; cmd: Command }> = [];
  walk(program, [program.name()], all);
  const lines = [
    "# `svc` command reference",
    "",
    "Generated from each command's `--help` by `npm run docs:cli`; a test fails when this page and",
    "the commands disagree. The guide to the commands is [cli.md](cli.md).",
    "",
  ];
  for (const { path, cmd } of all) {
    cmd.configureHelp({ helpWidth: WIDTH });
    lines.push(`## ${path.join(" ")}`, "", "```text", cmd.helpInformation().trimEnd(), "```", "");
  }
  return lines.join("\n");
}
