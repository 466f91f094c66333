// The real `svc` command (bin/svc.mjs) against a running server, and offline on a store file.
import path from "node:path";
import { writeFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";
import { runCli } from "../helpers/cli";
import { until } from "../helpers/http";
import { DEAD_PORT } from "../helpers/services";

let s: TestSvc;
let dir: string;
let env: Record<string, string>;
const f = (name: string) => path.join(dir, name);

beforeAll(async () => {
  s = await startTestSvc();
  dir = await tempDir("svc-cli-");
  env = { SVC_HOME: s.home, SVC_PORT: String(s.port) };
  await writeFile(f("bad.yaml"), "apiVersion: svc/v1\nkind: Model\nmetadata:\n  name: m1\nspec:\n  file: x.gguf\n  threads: two\n");
  await writeFile(
    f("good.yaml"),
    "apiVersion: svc/v1\nkind: Model\nmetadata:\n  name: m1\nspec:\n  file: missing.gguf\n  threads: 1\n---\n" +
      "apiVersion: svc/v1\nkind: Agent\nmetadata:\n  name: helper\nspec:\n  instructions: be brief\n---\n" +
      "apiVersion: svc/v1\nkind: Agent\nmetadata:\n  name: spare\nspec:\n  instructions: extra\n",
  );
  await writeFile(
    f("fewer.yaml"),
    "apiVersion: svc/v1\nkind: Agent\nmetadata:\n  name: helper\nspec:\n  instructions: be brief\n",
  );
});
afterAll(async () => {
  await s?.stop();
});

describe("svc config", () => {
  it("validate: a bad file exits 1 naming file:line:col and the path; a good one exits 0", async () => {
    const [bad, good] = await Promise.all([runCli(["config", "validate", f("bad.yaml")], env), runCli(["config", "validate", f("good.yaml")], env)]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(`${f("bad.yaml")}:7:12: /spec/threads`);
    expect(bad.stderr).not.toMatch(/\n\s+at /); // no stack trace
    expect(good.code).toBe(0);
    expect(good.stdout).toMatch(/3 objects valid/);
  });

  it("plan --detailed-exitcode exits 2, apply applies, plan then exits 0; a saved plan goes stale", async () => {
    const plan = await runCli(["config", "plan", "--detailed-exitcode", "-o", f("plan.json"), f("good.yaml")], env);
    expect(plan.code, plan.stderr).toBe(2);
    expect(plan.stdout).toMatch(/\+ create Model\/m1/);
    expect(plan.stdout).toMatch(/Plan: 3 to create, 0 to update, 0 to delete/);

    const apply = await runCli(["config", "apply", f("plan.json")], env);
    expect(apply.code, apply.stderr).toBe(0);
    expect(apply.stdout).toMatch(/Applied 3 changes/);
    expect(s.svc.store.get("Agent", "helper")).toBeTruthy();

    const again = await runCli(["config", "plan", "--detailed-exitcode", f("good.yaml")], env);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/No changes/);

    const stale = await runCli(["config", "apply", f("plan.json")], env);
    expect(stale.code).toBe(1);
    expect(stale.stderr).toMatch(/make a new plan/);
  });

  it("apply of a high-risk change without --yes exits 3 and changes nothing", async () => {
    const r = await runCli(["config", "apply", "--prune", f("fewer.yaml")], env);
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toMatch(/confirmation required/);
    expect(r.stderr).toMatch(/delete Agent\/spare/);
    expect(r.stderr).toMatch(/--yes/);
    expect(s.svc.store.get("Agent", "spare")).toBeTruthy();
  });
});

describe("svc status and doctor", () => {
  it("status lists the address and objects with their Ready conditions", async () => {
    await until(() => s.svc.store.get("Agent", "helper")?.status.observedGeneration === 1);
    const r = await runCli(["status"], env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`svc is running at ${s.url}`);
    expect(r.stdout).toMatch(/Agent\/helper\s+False\s+ModelNotSet\s+1\/1/);
    expect(r.stdout).toMatch(/Model\/m1\s+False/);
  });

  it("doctor reports the Model with a missing file, with a hint, and exits 1", async () => {
    const r = await runCli(["doctor"], env);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/\[ok\]\s+svc answers at/);
    expect(r.stdout).toMatch(/\[ok\]\s+store .* is migrated/);
    expect(r.stdout).toMatch(/\[FAIL\] Model\/m1: file .*missing\.gguf not found\n\s+hint: /);
  });
});

describe("offline", () => {
  it("apply and status work on the store file when no server answers, and say so", async () => {
    const home = await tempDir("svc-offline-");
    const offEnv = { SVC_HOME: home, SVC_PORT: String(DEAD_PORT) };
    const a = await runCli(["config", "apply", f("fewer.yaml")], offEnv);
    expect(a.code, a.stderr).toBe(0);
    expect(a.stderr).toMatch(/offline: no server answers/);
    expect(a.stdout).toMatch(/Applied 1 change/);
    const st = await runCli(["status"], offEnv);
    expect(st.code, st.stderr).toBe(0);
    expect(st.stdout).toMatch(/svc is not running/);
    expect(st.stdout).toMatch(/Agent\/helper\s+Unknown\s+Pending/);
  });
});

describe("svc serve", () => {
  it("starts, writes server.json, and stops gracefully on SIGTERM", async () => {
    const { existsSync } = await import("node:fs");
    const { startServeChild } = await import("../helpers/serve-child");
    const home = await tempDir("svc-serve-");
    const s = await startServeChild(["--port", "0", "--no-quickstart"], { SVC_HOME: home });
    const { url, child, exited } = s;
    try {
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect((await fetch(`${url}/health`)).status).toBe(200);
      await until(() => existsSync(path.join(home, "server.json")));
      const st = await runCli(["status"], { SVC_HOME: home, SVC_PORT: "" });
      expect(st.stdout).toContain(`svc is running at ${url}`); // port found through server.json
    } finally {
      child.kill("SIGTERM");
    }
    expect(await exited).toBe(0);
    expect(existsSync(path.join(home, "server.json"))).toBe(false);
    // stdout: the logs, one JSON object per line (not a terminal); stderr: no log lines
    for (const line of s.stdout().trim().split("\n")) expect(() => JSON.parse(line), line).not.toThrow();
    expect(s.logs().some((l) => l.msg === "stopped")).toBe(true);
    expect(s.stderr()).not.toMatch(/^\{/m);
  });
});

describe("svc serve stopped while it starts", () => {
  it("a SIGTERM sent during start-up stops svc gracefully once it is up: exit 0, stopped logged, no server.json left", async () => {
    const { existsSync } = await import("node:fs");
    const { spawnServe } = await import("../helpers/serve-child");
    const home = await tempDir("svc-serve-early-");
    const { child, stdout, stderr, exited } = spawnServe(["--port", "0", "--no-quickstart"], { SVC_HOME: home });
    // the first progress line: the CLI runs `serve`, nothing is loaded or bound yet
    await until(() => /^svc: starting/m.test(stderr()) || child.exitCode !== null);
    child.kill("SIGTERM");
    expect(await exited, stderr()).toBe(0);
    expect(stdout().split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l).msg)).toContain("stopped");
    expect(existsSync(path.join(home, "server.json"))).toBe(false);
  });
});
