// A stdio tool service that exits during a call while a process it started still holds its
// stdout (a helper it spawned with inherited stdio, as shell-based servers do): the call must fail
// at once with service_unavailable, not wait for the tool-call timeout, and the connection must
// come back for the next call (before, the exit went unnoticed: every later call timed out and the
// status stayed Connected).
import path from "node:path";
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";
import { until } from "../helpers/http";
import { alive, apply, call, mcpDoc, node, rough, waitReason } from "./helpers";

describe("a stdio service that exits while its stdout is still held open", () => {
  let s: TestSvc;
  let dir: string;
  const grandchildren: number[] = [];
  beforeAll(async () => {
    s = await startTestSvc();
    dir = await tempDir("svc-mcp-exit-");
  });
  afterAll(async () => {
    await s?.stop();
    for (const pid of grandchildren) if (alive(pid)) process.kill(pid, "SIGKILL");
  });

  it("the call fails with service_unavailable long before the tool-call timeout, and the service comes back", async () => {
    const pidfile = path.join(dir, "pid");
    // a timeout far longer than the wait below: a 504 would mean the exit went unnoticed
    await apply(s, [mcpDoc("rough", { transport: "stdio", command: node, args: [rough, "--pidfile", pidfile], toolCallTimeoutSeconds: 50 })]);
    await waitReason(s, "rough", "Connected");
    const first = Number(await readFile(pidfile, "utf8"));

    const t0 = Date.now();
    const r = await call(s, "rough_orphan", {});
    grandchildren.push(Number(await readFile(pidfile + ".child", "utf8")));
    expect({ status: r.status, code: r.json.error?.code }).toEqual({ status: 503, code: "service_unavailable" });
    expect(Date.now() - t0).toBeLessThan(40_000);
    expect(alive(first)).toBe(false);
    expect(alive(grandchildren[0])).toBe(true); // still holding the old stdout

    // reconnected: a new process answers
    await until(() => Number(readPid(pidfile)) !== first && s.svc.engines.mcp!.state("rough")?.phase === "ready", 30_000, 50);
    const ok = await call(s, "rough_echo", { message: "back" });
    expect(ok.status).toBe(200);
    expect(ok.json.result.content[0].text).toBe("echo: back");
  }, 90_000);
});

function readPid(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
}
