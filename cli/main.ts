// The `svc` command. Expected failures print one clear message (file:line:col for manifests)
// and set the exit code: 0 done / no change, 1 failed, 2 changes pending, 3 confirmation needed.
import { CommanderError, type Command } from "commander";
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

/** The command group `args` name, when they name one and nothing else (no option, no argument). */
function groupAlone(program: Command, args: string[]): Command | undefined {
  let cmd = program;
  for (const a of args) {
    const sub = cmd.commands.find((c) => c.name() === a || c.aliases().includes(a));
    if (!sub) return undefined;
    cmd = sub;
  }
  // a command with an action of its own (`svc mcp`) runs it; only a pure group lists its commands
  return cmd !== program && cmd.commands.length > 0 && !(cmd as unknown as { _actionHandler?: unknown })._actionHandler ? cmd : undefined;
}

export async function main(argv: string[]): Promise<number> {
  quietOnClosedPipe(process.stdout);
  const program = await buildProgram(argv);
  if (argv.length <= 2) {
    // `svc` alone: the help, as an answer rather than an error
    program.outputHelp();
    return EXIT.ok;
  }
  const group = groupAlone(program, argv.slice(2));
  if (group) {
    // `svc keys`, `svc pair invite`: the group's commands, as an answer on stdout like `svc`
    // alone (commander would print them to stderr, as for a usage error, though svc exits 0)
    group.outputHelp();
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
