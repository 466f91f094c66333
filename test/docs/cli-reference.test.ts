// docs/cli-reference.md is the commands' own --help: regenerate it (npm run docs:cli) whenever a
// command or flag changes, or this fails.
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { buildProgram } from "../../cli/program";
import { cliReference } from "../../cli/reference";
import { repoRoot } from "../helpers/cli";

describe("docs/cli-reference.md", () => {
  it("is what the commands' --help says today", async () => {
    const page = readFileSync(path.join(repoRoot, "docs/cli-reference.md"), "utf8");
    expect(page, "stale: run `npm run docs:cli`").toBe(cliReference(await buildProgram()));
  });

  it("covers every command, the flags that were only in --help among them", () => {
    const page = readFileSync(path.join(repoRoot, "docs/cli-reference.md"), "utf8");
    for (const h of ["## svc serve", "## svc config export", "## svc config schema", "## svc status", "## svc pair", "## svc keys generate", "## svc mcp"]) expect(page).toContain(h);
    for (const flag of ["--include-api-owned", "--json", "--timeout"]) expect(page).toContain(flag);
  });
});
