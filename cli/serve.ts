// `svc serve`: run the server until SIGTERM/SIGINT, then stop gracefully (stop accepting, stop
// controllers, close engines, flush the store).
// Streams: stdout carries the logs (JSON lines, or human lines on a terminal; --log-level /
// SVC_LOG_LEVEL, SVC_LOG_FORMAT); stderr carries what a person starting svc reads: start-up
// progress ("svc: …"), then "svc listening on http://HOST:PORT" once it serves.
import type { Command } from "commander";
import { parsePort } from "./connect";
import { CliError } from "./errors";
import type { LogFormat, LogLevel } from "../api/log";
import { startupSteps } from "../api/startup-progress";
import { resolveHome, storeFile } from "../engines/paths";

/** how long a graceful stop may take before svc exits anyway */
const STOP_BOUND_MS = 60_000;

export function registerServe(program: Command): void {
  program
    .command("serve")
    .description("run the svc server (default 127.0.0.1:1337; the quickstart on an empty store)")
    .option("--port <port>", "listen port; beats the Server manifest (default: SVC_PORT, then the manifest, then 1337)")
    .option("--host <address>", "listen address; beats the Server manifest and its exposure")
    .option("--config <paths...>", "manifest files or folders applied at start (source \"startup\")")
    .option("--watch <dir>", "apply the manifests in DIR on every save")
    .option("--no-quickstart", "do not apply examples/quickstart on an empty store")
    .option("--home <dir>", "data dir (default: SVC_HOME, <SVC_TEST_ROOT>/.svc, ~/.svc)")
    .option("--log-level <level>", "log level: fatal | error | warn | info | debug | trace | silent (default: SVC_LOG_LEVEL, else info)")
    .action(async (o) => {
      // signals are caught from here on: one during start-up stops svc as soon as it is up (the
      // default action would kill it mid-start, with the store open and server.json written)
      let stopRequested: string | undefined;
      let onSignal = (sig: string) => {
        if (stopRequested) {
          process.stderr.write(`second ${sig}: exiting now\n`);
          process.exit(1);
        }
        stopRequested = sig;
      };
      const signal = (sig: string) => () => onSignal(sig);
      process.on("SIGTERM", signal("SIGTERM"));
      process.on("SIGINT", signal("SIGINT"));
      // the store's threads are unref'd (they never keep a process alive by themselves), yet
      // start-up and stop await their answers: a ref'd timer holds the process until the command
      // is done, so the event loop never runs empty under an unsettled await (Node then exits
      // with 13 instead of 0: seen as a SIGTERM test failing under load)
      const alive = setInterval(() => undefined, 2 ** 30);
      try {
        const port = o.port !== undefined ? parsePort(o.port, "--port") : process.env.SVC_PORT ? parsePort(process.env.SVC_PORT, "SVC_PORT") : undefined;
        // pino is loaded only by the command that logs
        const { createLogger, loadPretty, parseLogFormat, parseLogLevel } = await import("../api/log");
        let level: LogLevel;
        let format: LogFormat;
        try {
          level = o.logLevel !== undefined ? parseLogLevel(o.logLevel, "--log-level") : process.env.SVC_LOG_LEVEL ? parseLogLevel(process.env.SVC_LOG_LEVEL, "SVC_LOG_LEVEL") : "info";
          format = parseLogFormat(process.env.SVC_LOG_FORMAT, process.stdout.isTTY === true);
        } catch (e: any) {
          throw new CliError(e.message);
        }
        const progress = (line: string) => void process.stderr.write(line + "\n");
        const steps = startupSteps(progress);
        steps.say(`starting (data dir ${resolveHome(o.home)}; logs on stdout at level ${level})`);
        // the server's modules (the engines load after the listener is bound: boot/engines.ts)
        const { startSvc } = await steps.run("loading svc", () => import("../boot/start"));
        if (format === "pretty") await loadPretty();
        const log = createLogger({ level, format });
        let running;
        try {
          running = await startSvc({ home: o.home, port, host: o.host, config: o.config, watch: o.watch, quickstart: o.quickstart, log, progress });
        } catch (e: any) {
          await log.flush();
          throw new CliError(startupFailure(e, resolveHome(o.home)));
        }
        steps.say("Ctrl-C stops svc");
        process.stderr.write(`svc listening on ${running.url}\n`);
        await new Promise<void>((resolve) => {
          let stopping = false;
          onSignal = (sig: string) => {
            if (stopping) {
              process.stderr.write(`second ${sig}: exiting now\n`);
              process.exit(1);
            }
            stopping = true;
            // every step of stop has its own bound; this one is the last resort, never a hang
            setTimeout(() => {
              process.stderr.write(`svc did not stop within ${STOP_BOUND_MS / 1000} s of ${sig}: exiting now\n`);
              process.exit(1);
            }, STOP_BOUND_MS).unref();
            running!.stop().then(resolve, (e) => {
              process.stderr.write(`error while stopping: ${e?.message ?? e}\n`);
              process.exitCode = 1;
              resolve();
            });
          };
          if (stopRequested) onSignal(stopRequested);
        });
        // stopped: a socket nobody will read again (node-llama-cpp's downloader probes a file's size
        // with a GET whose body it leaves unread) must not keep the process alive
        setTimeout(() => process.exit(), 2000).unref();
      } finally {
        clearInterval(alive);
      }
    });
}


/** What failed, where, and what to do, for a failure of startSvc; the raw message is kept. */
export function startupFailure(e: any, home: string): string {
  const msg = String(e?.message ?? e).trim();
  const code = String(e?.code ?? "");
  const has = (re: RegExp) => re.test(msg) || re.test(code);
  const shared = !!process.env.SVC_DATABASE_URL?.trim();
  const store = storeFile(home);
  const doctor = `run \`svc doctor --home ${home}\` for a diagnosis`;
  const say = (what: string, todo: string) => `did not start: ${what}\n  cause: ${msg.replace(/\n/g, "\n    ")}\n  to fix: ${todo}`;
  if (code === "ESVCRUNNING") {
    // a second svc serve on the same data dir (boot/start.ts: takeServeLock) refuses to start
    return say(`another svc serve is running on the data dir ${home}`, `stop it first (\`svc status --home ${home}\` shows it), or pass another --home (SVC_HOME); if no svc runs, remove ${e?.lockFile ?? "serve.lock"}`);
  }
  if (has(/SQLITE_NOTADB|file is not a database/i)) {
    return say(`the store ${store} is not a SQLite database (damaged, or another kind of file)`, `${doctor}; move the file aside to start with an empty store (keys and objects in it are then gone)`);
  }
  if (has(/SQLITE_CORRUPT|database disk image is malformed/i)) {
    return say(`the store ${store} is damaged (SQLite reports a malformed database)`, `${doctor}; restore a backup, or move the file aside to start with an empty store`);
  }
  if (has(/SQLITE_BUSY|database is locked/i)) {
    return say(`the store ${store} is locked by another process`, `is another svc serve running on this data dir? \`svc status --home ${home}\` shows it; stop it or pass another --home`);
  }
  if (has(/SQLITE_READONLY|readonly database/i)) {
    return say(`the store ${store} cannot be written (read-only)`, `make the file and the data dir ${home} writable for this user, or pass another --home (SVC_HOME)`);
  }
  if (has(/SQLITE_CANTOPEN|unable to open database file/i)) {
    return say(`the store ${store} cannot be opened`, `check that the data dir ${home} exists and is readable and writable by this user, or pass another --home (SVC_HOME)`);
  }
  const listen = /^cannot listen on (\S+): (\S+)/.exec(msg);
  if (listen) {
    const [, url, why] = listen;
    if (why === "EADDRINUSE") return say(`${url} is in use by another process`, "stop that program, or pass --port N (or SVC_PORT); `svc doctor` tells whether it is an svc");
    if (why === "EACCES" || why === "EPERM") return say(`no permission to listen on ${url}`, "ports below 1024 need privileges: pass --port with a port from 1024 up (or SVC_PORT)");
    if (why === "EADDRNOTAVAIL" || why === "ENOTFOUND" || why === "EAI_AGAIN") return say(`${url} is not an address of this machine`, "pass --host 127.0.0.1 (or fix the Server manifest's spec.host)");
    return say(`cannot listen on ${url}`, "pass another --host or --port, or fix the Server manifest's host and port");
  }
  if (/^(EACCES|EPERM|EROFS|ENOTDIR|ENOSPC|EEXIST)$/.test(code) && typeof e?.path === "string") {
    const what = e.syscall === "mkdir" ? `cannot create the data dir ${e.path}` : `cannot write ${e.path}`;
    return say(`${what} (${code})`, `pass --home (or set SVC_HOME) to a folder this user can write${code === "ENOSPC" ? ", or free disk space" : ""}`);
  }
  if (has(/SVC_DATABASE_URL/) || (shared && has(/ECONNREFUSED|ENOTFOUND|ETIMEDOUT|password authentication|does not exist|P1001|P1000/))) {
    return say("the shared store (SVC_DATABASE_URL) cannot be used", `check SVC_DATABASE_URL and that PostgreSQL is running and reachable, or unset it for the embedded store; ${doctor}`);
  }
  if (has(/SVC_REDIS_URL|redis/i)) {
    return say("the shared cache (SVC_REDIS_URL) cannot be used", `check SVC_REDIS_URL and that Redis is running and reachable, or unset it; ${doctor}`);
  }
  if (e?.name === "ManifestError" || has(/start-up config|manifest/i)) {
    return say("the start-up config (--config) is not valid", "fix the manifests named in the cause (`svc config plan <paths>` shows the same errors), or start without --config");
  }
  return say("an unexpected error during start-up", `${doctor}; the logs on stdout say more`);
}
