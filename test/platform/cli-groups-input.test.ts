// A command group named alone answers with its commands on stdout (exit 0, as `svc` alone does),
// and a malformed --wait of `svc pair request` is refused instead of waiting forever.
import { spawn } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";
import { repoRoot, runCli } from "../helpers/cli";

describe("a command group alone (`svc keys`)", () => {
  it("lists its commands on stdout and exits 0", async () => {
    for (const [args, command] of [[["keys"], "revoke"], [["pair", "invite"], "accept"], [["cache"], "purge"]] as const) {
      const r = await runCli([...args]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout, args.join(" ")).toContain(`Usage: svc ${args.join(" ")} [options] [command]`);
      expect(r.stdout, args.join(" ")).toMatch(new RegExp(`^  ${command} `, "m"));
      expect(r.stderr, args.join(" ")).toBe("");
    }
  });

  it("an unknown command in a group is still an error (exit 1), and --help still prints the help", async () => {
    const bad = await runCli(["keys", "nosuch"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("unknown command 'nosuch'");
    const help = await runCli(["keys", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Usage: svc keys");
  });
});

describe("svc pair request --wait", () => {
  let s: TestSvc;
  beforeAll(async () => {
    s = await startTestSvc();
  });
  afterAll(async () => {
    await s?.stop();
  });

  it("a --wait that is not a number of seconds is refused at once, naming it (not a wait that never ends)", async () => {
    const home = await tempDir("svc-cli-pair-wait-");
    const child = spawn(process.execPath, [path.join(repoRoot, "bin", "svc.mjs"), "pair", "request", "--url", s.url, "--wait", "2m", "--state", path.join(home, "state.json")], {
      cwd: repoRoot,
      env: { ...process.env, NO_COLOR: "1", SVC_HOME: home },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    // generous: the refusal comes as soon as node has started; a NaN deadline never comes at all
    const code = await new Promise<number | "still waiting">((resolve) => {
      const t = setTimeout(() => resolve("still waiting"), 30_000);
      child.on("close", (c) => {
        clearTimeout(t);
        resolve(c ?? -1);
      });
    });
    if (code === "still waiting") child.kill("SIGKILL");
    expect(code, stderr).toBe(1);
    expect(stderr).toContain('--wait: "2m" is not a number of seconds');
  }, 45_000);
});
