// `svc pair call … | head`: the reader leaving early ends the command quietly (exit 0, nothing on
// stderr), not with an EPIPE stack trace.
import { spawn } from "node:child_process";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { postJson } from "../helpers/http";
import { repoRoot, runCli } from "../helpers/cli";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";

let s: TestSvc | undefined;
afterAll(async () => {
  await s?.stop();
});

describe("svc pair call piped into head", () => {
  it("ends quietly when the reader closes the pipe", async () => {
    s = await startTestSvc();
    const home = await tempDir("svc-pipe-");
    const state = path.join(home, "device.json");
    const code = (await postJson(`${s.url}/pair/code`, {})).json.code;
    const paired = await runCli(["pair", "code", code, "--url", s.url, "--state", state, "--name", "pipe", "--json"], { SVC_HOME: home });
    expect(paired.code, paired.stderr).toBe(0);
    // /openapi.json is far larger than a pipe's buffer, and arrives in many frames
    const cmd = `node ${JSON.stringify(path.join(repoRoot, "bin/svc.mjs"))} pair call GET /openapi.json --state ${JSON.stringify(state)} | head -c 20 > /dev/null; echo "svc-exit=\${PIPESTATUS[0]}" >&2`;
    const child = spawn("bash", ["-c", cmd], { cwd: repoRoot, env: { ...process.env, SVC_HOME: home, NO_COLOR: "1" } });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    await new Promise((resolve) => child.on("close", resolve));
    expect(stderr).toContain("svc-exit=0");
    expect(stderr).not.toMatch(/EPIPE|Error|    at /);
  }, 60_000);
});
