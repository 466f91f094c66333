// Start a real svc in-process: 127.0.0.1, an ephemeral port, a temp data dir, no quickstart.
import { mkdtemp, mkdir } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { startSvc, type RunningSvc, type StartOptions } from "../../boot/start";
import { jsonLogger } from "../../api/log";

export interface TestSvc extends RunningSvc {
  /** every log line as parsed JSON, for assertions */
  logs: Array<Record<string, any>>;
}

/** A fresh temp dir under SVC_TEST_ROOT (or the OS temp dir). */
export async function tempDir(prefix = "svc-test-"): Promise<string> {
  const root = process.env.SVC_TEST_ROOT || os.tmpdir();
  await mkdir(root, { recursive: true });
  return mkdtemp(path.join(root, prefix));
}

export async function startTestSvc(opts: StartOptions & { printLogs?: boolean } = {}): Promise<TestSvc> {
  const logs: Array<Record<string, any>> = [];
  const home = opts.home ?? (await tempDir());
  const log = jsonLogger({
    write: (line) => {
      logs.push(JSON.parse(line));
      if (opts.printLogs || process.env.SVC_TEST_LOGS) process.stderr.write(line + "\n");
    },
  });
  const running = await startSvc({ host: "127.0.0.1", port: 0, quickstart: false, log, ...opts, home });
  return Object.assign(running, { logs }) as TestSvc;
}
