#!/usr/bin/env node
// `npm run docs:cli`: write docs/cli-reference.md from the commands' own --help.
import { writeFileSync } from "node:fs";
import { register } from "tsx/esm/api";

register();
const { buildProgram } = await import("../cli/program.ts");
const { cliReference } = await import("../cli/reference.ts");
const file = new URL("../docs/cli-reference.md", import.meta.url);
writeFileSync(file, cliReference(await buildProgram()));
process.stdout.write(`wrote ${file.pathname}\n`);
