// `svc serve`: run the server until SIGTERM/SIGINT, then stop gracefully (stop accepting, stop
// controllers, close engines, flush the store).
import type { Command } from "commander";
import { parsePort } from "./connect";
import { CliError } from "./errors";

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
    .action(async (o) => {
      const port = o.port !== undefined ? parsePort(o.port, "--port") : process.env.SVC_PORT ? parsePort(process.env.SVC_PORT, "SVC_PORT") : undefined;
      const { startSvc } = await import("../api/server");
      let running;
      try {
        running = await startSvc({ home: o.home, port, host: o.host, config: o.config, watch: o.watch, quickstart: o.quickstart });
      } catch (e: any) {
        throw new CliError(`svc did not start: ${e?.message ?? e}`);
      }
      process.stdout.write(`svc serving at ${running.url} (data dir ${running.home}); Ctrl-C stops it\n`);
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
