// The `svc` command. Expected failures print one clear message (file:line:col for manifests)
// and set the exit code: 0 done / no change, 1 failed, 2 changes pending, 3 confirmation needed.
import { CommanderError } from "commander";
import { buildProgram } from "./program";
import { CliError, EXIT } from "./errors";

export { buildProgram, VERSION } from "./program";

/** A reader that went away (`svc … | head`) ends the command quietly, as Unix tools do, instead
 * of an unhandled EPIPE stack trace. */
function quietOnClosedPipe(stream: NodeJS.WriteStream): void {
  stream.on("error", (e: NodeJS.ErrnoException) => {
    if (e.code === "EPIPE") process.exit(0);
    throw e;
  });
}

export async function main(argv: string[]): Promise<number> {
  quietOnClosedPipe(process.stdout);
  const program = await buildProgram(argv);
  if (argv.length <= 2) {
    // `svc` alone: the help, as an answer rather than an error
    program.outputHelp();
    return EXIT.ok;
  }
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === "number" ? process.exitCode : EXIT.ok;
  } catch (e: any) {
    if (e instanceof CommanderError) {
      // --help / --version exit 0, and so does a command group alone (`svc keys`: its help);
      // usage errors were already printed by commander
      return e.exitCode === 0 || e.code === "commander.help" ? EXIT.ok : EXIT.failed;
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
