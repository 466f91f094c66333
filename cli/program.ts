// The `svc` command tree (every command and flag), apart from running it, so that the CLI
// reference in docs/ can be generated from the commands' own --help.
import { readFileSync } from "node:fs";
import { Command } from "commander";
import { registerServe } from "./serve";
import { registerConfig } from "./config";
import { registerStatus } from "./status";
import { registerDoctor } from "./doctor";
import { registerKeys } from "./keys";
import { registerModels } from "./models";
import { registerMcp } from "./mcp";
import { registerPair } from "./pair";
import { registerUsage } from "./usage";

/** This build's version, from package.json. */
export const VERSION: string = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).version;

export function buildProgram(): Command {
  const program = new Command();
  program
    .name("svc")
    .description("model gateway and local model/agent server, driven by YAML manifests")
    .version(VERSION, "-V, --version", "print the version")
    .showHelpAfterError()
    .exitOverride()
    .addHelpText("after", "\nStart here: `svc serve` (http://127.0.0.1:1337, the quickstart on first start), then `svc status` or `svc doctor`.\n`svc COMMAND --help` describes a command.");
  registerServe(program);
  registerConfig(program);
  registerStatus(program);
  registerDoctor(program);
  registerKeys(program);
  registerModels(program);
  registerMcp(program);
  registerPair(program);
  registerUsage(program);
  program
    .command("version")
    .description("print the version")
    .action(() => void process.stdout.write(`svc ${VERSION} (Node ${process.version}, ${process.platform} ${process.arch})\n`));
  return program;
}

