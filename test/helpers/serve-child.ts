// A real `svc serve` child process (bin/svc.mjs), resolved once it prints
// "svc listening on http://HOST:PORT" on stderr. Its stdout holds the logs (JSON lines).
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { repoRoot } from "./cli";
import { until } from "./http";

export const LISTENING = /^svc listening on (http:\/\/\S+)$/m;

export interface ServeChild {
  url: string;
  child: ChildProcess;
  /** everything written so far */
  stdout(): string;
  stderr(): string;
  /** stdout's JSON lines, parsed (other lines skipped) */
  logs(): Array<Record<string, any>>;
  /** resolves with the exit code once the process has exited */
  exited: Promise<number | null>;
  /** SIGTERM (if still running), then wait for the exit code */
  stop(): Promise<number | null>;
  kill9(): Promise<void>;
}

/** Spawn `svc serve ARGS` (SVC_HOME and the like go in env). Rejects with its stderr if it exits
 * or does not listen within timeoutMs. */
export async function startServeChild(args: string[], env: Record<string, string | undefined> = {}, opts: { timeoutMs?: number } = {}): Promise<ServeChild> {
  const spawned = spawnServe(args, env);
  const { child, exited } = spawned;
  try {
    await until(() => LISTENING.test(spawned.stderr()) || child.exitCode !== null, opts.timeoutMs ?? 60_000);
  } catch {
    /* reported below */
  }
  const url = spawned.stderr().match(LISTENING)?.[1];
  if (!url) {
    if (child.exitCode === null) child.kill("SIGKILL");
    await exited;
    throw new Error(`svc serve did not start (exit ${child.exitCode}); stderr:\n${spawned.stderr()}\nstdout:\n${spawned.stdout().slice(-2000)}`);
  }
  return {
    url,
    child,
    stdout: spawned.stdout,
    stderr: spawned.stderr,
    logs: () =>
      spawned
        .stdout()
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l)),
    exited,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      return exited;
    },
    kill9: async () => {
      child.kill("SIGKILL");
      await exited;
    },
  };
}

/** Spawn `svc serve ARGS` and collect what it writes, without waiting for anything. */
export function spawnServe(args: string[], env: Record<string, string | undefined> = {}): { child: ChildProcess; stdout(): string; stderr(): string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [path.join(repoRoot, "bin", "svc.mjs"), "serve", ...args], {
    cwd: repoRoot,
    env: { ...process.env, NO_COLOR: "1", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (err += d));
  const exited = new Promise<number | null>((r) => child.on("close", (c) => r(c)));
  return { child, stdout: () => out, stderr: () => err, exited };
}
