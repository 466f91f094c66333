// The `svc` command. Expected failures print one clear message (file:line:col for manifests)
// and set the exit code: 0 done / no change, 1 failed, 2 changes pending, 3 confirmation needed.
import { Command, CommanderError } from "commander";
import { registerServe } from "./serve";
import { registerConfig } from "./config";
import { registerStatus } from "./status";
import { registerDoctor } from "./doctor";
import { registerKeys } from "./keys";
import { registerModels } from "./models";
import { registerMcp } from "./mcp";
import { registerPair } from "./pair";
import { CliError, EXIT } from "./errors";

export function buildProgram(): Command {
  const program = new Command();
  program
    .name("svc")
    .description("model gateway and local model/agent server, driven by YAML manifests")
    .version("0.1.0")
    .showHelpAfterError()
    .exitOverride();
  registerServe(program);
  registerConfig(program);
  registerStatus(program);
  registerDoctor(program);
  registerKeys(program);
  registerModels(program);
  registerMcp(program);
  registerPair(program);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === "number" ? process.exitCode : EXIT.ok;
  } catch (e: any) {
    if (e instanceof CommanderError) {
      // --help / --version exit 0; usage errors were already printed by commander
      return e.exitCode === 0 ? EXIT.ok : EXIT.failed;
    }
    if (e instanceof CliError) {
      process.stderr.write(`svc: ${e.message}\n`);
      return e.code;
    }
    // unexpected: still no stack trace for the user; SVC_DEBUG=1 shows it
    process.stderr.write(`svc: ${e?.message ?? e}\n`);
    if (process.env.SVC_DEBUG) process.stderr.write(String(e?.stack ?? "") + "\n");
    return EXIT.failed;
  }
}

process.exitCode = await main(process.argv);
