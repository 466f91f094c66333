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
import { resolveHome } from "../engines/paths";

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
      // the first start compiles svc's sources: on a slow disk this alone can take a while
      const { startSvc } = await steps.run("loading svc", () => import("../boot/start"));
      if (format === "pretty") await loadPretty();
      const log = createLogger({ level, format });
      let running;
      try {
        running = await startSvc({ home: o.home, port, host: o.host, config: o.config, watch: o.watch, quickstart: o.quickstart, log, progress });
      } catch (e: any) {
        await log.flush();
        throw new CliError(`svc did not start: ${e?.message ?? e}`);
      }
      steps.say("Ctrl-C stops svc");
      process.stderr.write(`svc listening on ${running.url}\n`);
      await new Promise<void>((resolve) => {
        let stopping = false;
        const onSignal = (sig: string) => {
          if (stopping) {
            process.stderr.write(`second ${sig}: exiting now\n`);
            process.exit(1);
          }
          stopping = true;
          running!.stop().then(resolve, (e) => {
            process.stderr.write(`error while stopping: ${e?.message ?? e}\n`);
            process.exitCode = 1;
            resolve();
          });
        };
        process.on("SIGTERM", () => onSignal("SIGTERM"));
        process.on("SIGINT", () => onSignal("SIGINT"));
      });
    });
}
