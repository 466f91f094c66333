// The `svc` command tree (every command and flag), apart from running it, so that the CLI
// reference in docs/ can be generated from the commands' own --help.
// Each command's module is imported only when that command runs (or for the full help): `svc
// version` loads none, `svc status` loads status.ts and what it imports, nothing else.
import { readFileSync } from "node:fs";
import { Command } from "commander";

/** This build's version, from package.json. */
export const VERSION: string = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).version;

type Register = (program: Command) => void;

/** Every command, in the order `svc --help` lists them, and the module that registers it. */
const COMMANDS: Record<string, () => Promise<Register>> = {
  serve: async () => (await import("./serve")).registerServe,
  config: async () => (await import("./config")).registerConfig,
  status: async () => (await import("./status")).registerStatus,
  doctor: async () => (await import("./doctor")).registerDoctor,
  keys: async () => (await import("./keys")).registerKeys,
  models: async () => (await import("./models")).registerModels,
  mcp: async () => (await import("./mcp")).registerMcp,
  pair: async () => (await import("./pair")).registerPair,
  usage: async () => (await import("./usage")).registerUsage,
  cache: async () => (await import("./cache")).registerCache,
};

/** Commands that need no other command's module: `version` and the program's own -V. */
const SELF_CONTAINED = new Set(["version", "-V", "--version"]);

/**
 * The program. With `argv`, only the command it names is registered (every command when it names
 * none, or asks for help, so that help and "did you mean" see them all); without, every command.
 */
export async function buildProgram(argv?: string[]): Promise<Command> {
  const first = argv?.[2];
  const names = first !== undefined && SELF_CONTAINED.has(first) ? [] : first !== undefined && first in COMMANDS ? [first] : Object.keys(COMMANDS);
  const registers = await Promise.all(names.map((n) => COMMANDS[n]()));
  const program = new Command();
  program
    .name("svc")
    .description("model gateway and local model/agent server, driven by YAML manifests")
    .version(VERSION, "-V, --version", "print the version")
    .showHelpAfterError()
    .exitOverride()
    .addHelpText("after", "\nStart here: `svc serve` (http://127.0.0.1:1337, the quickstart on first start), then `svc status` or `svc doctor`.\n`svc COMMAND --help` describes a command.");
  for (const register of registers) register(program);
  program
    .command("version")
    .description("print the version")
    .action(() => void process.stdout.write(`svc ${VERSION} (Node ${process.version}, ${process.platform} ${process.arch})\n`));
  return program;
}
