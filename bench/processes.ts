// Child processes for the benchmarks: pinned to a core when taskset exists, and `svc serve`
// started on a temp home with its URL read from the server.json it writes.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const sleep = (n: number) => new Promise((r) => setTimeout(r, n));

const canPin = existsSync("/usr/bin/taskset") && os.cpus().length >= 2;

/** Start `cmd args` on `core` (or anywhere when core is undefined or pinning is unavailable). */
export function start(core: number | undefined, cmd: string, args: string[], env: Record<string, string> = {}): ChildProcess {
  const [c, a] = core !== undefined && canPin ? ["/usr/bin/taskset", ["-c", String(core), cmd, ...args]] : [cmd, args];
  return spawn(c, a, { cwd: root, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
}

/** `svc serve --port 0 --config <dir> --no-quickstart` on `home`; resolves with the process and its URL. */
export async function startSvcProcess(opts: { home: string; config: string; core?: number; env?: Record<string, string> }): Promise<{ proc: ChildProcess; url: string }> {
  const proc = start(opts.core, process.execPath, ["bin/svc.mjs", "serve", "--port", "0", "--config", opts.config, "--no-quickstart"], {
    SVC_HOME: opts.home,
    ...opts.env,
  });
  proc.stdout?.resume();
  proc.stderr?.resume();
  const f = path.join(opts.home, "server.json");
  for (let i = 0; i < 600; i++) {
    const url = existsSync(f) ? readUrl(f) : undefined; // the file may be half-written
    if (url) return { proc, url };
    if (proc.exitCode !== null) break;
    await sleep(100);
  }
  proc.kill("SIGTERM");
  throw new Error("svc did not start");
}

function readUrl(file: string): string | undefined {
  try {
    return JSON.parse(readFileSync(file, "utf8")).url;
  } catch {
    return undefined;
  }
}
