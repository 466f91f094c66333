// Issue 38: what an operator meets with the real `svc` command against a running server:
// --wait stops on a terminal condition, diagnostics name their file, export round-trips,
// listing commands take -o, status and doctor tell the truth.
import path from "node:path";
import { writeFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";
import { runCli } from "../helpers/cli";

let s: TestSvc;
let dir: string;
let env: Record<string, string>;
const f = (name: string) => path.join(dir, name);

beforeAll(async () => {
  delete process.env.DEADONLY_KEY_38;
  s = await startTestSvc();
  dir = await tempDir("svc-cli38-");
  env = { SVC_HOME: s.home, SVC_PORT: String(s.port) };
});
afterAll(async () => {
  await s?.stop();
});

describe("apply --wait (item 1)", () => {
  it("stops at once, non-zero, on a missing credential, naming CredentialMissing, the variable and the fix", async () => {
    await writeFile(
      f("dead.yaml"),
      "apiVersion: svc/v1\nkind: Provider\nmetadata:\n  name: dead\nspec:\n  type: openai\n  baseUrl: http://127.0.0.1:9/v1\n  credential: env:DEADONLY_KEY_38\n  models:\n    - name: dead-model\n",
    );
    const t0 = Date.now();
    const r = await runCli(["config", "apply", "--wait", "--source", "dead", f("dead.yaml")], env);
    const took = Date.now() - t0;
    expect(r.code, r.stderr).not.toBe(0);
    expect(took).toBeLessThan(5000);
    expect(r.stdout).toMatch(/failed +Provider\/dead .*CredentialMissing/);
    expect(r.stdout).toContain("DEADONLY_KEY_38");
    expect(r.stdout).toMatch(/fix: set DEADONLY_KEY_38 in svc's environment and restart svc/);
    expect(r.stdout).toMatch(/Stopped waiting: Provider\/dead \(CredentialMissing\)/);
  });

  it("a timeout says what it waited for and how long", async () => {
    await writeFile(f("agent.yaml"), "apiVersion: svc/v1\nkind: Agent\nmetadata:\n  name: waiter\nspec:\n  instructions: hi\n");
    const r = await runCli(["config", "apply", "--wait", "--timeout", "1", "--source", "waiter", f("agent.yaml")], env);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toMatch(/Timed out after 1 s waiting for Agent\/waiter to be Ready/);
  });
});

describe("a routed Model naming a Provider that does not exist (item 9)", () => {
  it("says the Provider does not exist, and --wait stops on it", async () => {
    await writeFile(f("smart.yaml"), "apiVersion: svc/v1\nkind: Model\nmetadata:\n  name: smart\nspec:\n  router:\n    deployments:\n      - provider: nosuch\n");
    const t0 = Date.now();
    const r = await runCli(["config", "apply", "--wait", "--source", "smart", f("smart.yaml")], env);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toContain("Provider nosuch does not exist");
    expect(r.stdout).not.toContain("does not list model");
  });
});

describe("diagnostics name the file and the line in it (item 2)", () => {
  it("plan warnings from the server name the file, not <documents>, and a line counted in that file", async () => {
    const folder = f("two");
    await import("node:fs/promises").then((fs) => fs.mkdir(folder));
    await writeFile(path.join(folder, "a.yaml"), "apiVersion: svc/v1\nkind: Agent\nmetadata:\n  name: first38\nspec:\n  instructions: one\n");
    await writeFile(path.join(folder, "b.yaml"), "# the second file\napiVersion: svc/v1\nkind: Agent\nmetadata:\n  name: second38\nspec:\n  instructions: two\n");
    const own = await runCli(["config", "apply", "--source", "elsewhere", path.join(folder, "b.yaml")], env);
    expect(own.code, own.stderr).toBe(0);
    const r = await runCli(["config", "plan", folder], env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toContain("<documents>");
    expect(r.stdout).toContain(`warning: ${path.join(folder, "b.yaml")}:2:1: /metadata/name: Agent/second38 is owned by config:elsewhere`);
  });

  it("a key indented too deep is reported once, on the line that is wrong", async () => {
    await writeFile(f("indent.yaml"), "apiVersion: svc/v1\nkind: Agent\nmetadata:\n  name: a\nspec:\n  instructions: hi\n   maxIterations: 3\n");
    const r = await runCli(["config", "validate", f("indent.yaml")], env);
    expect(r.code).toBe(1);
    const lines = r.stderr.split("\n").filter((l) => l.includes("indent.yaml:"));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`${f("indent.yaml")}:7:4: /: YAML: bad indentation`);
  });
});

describe("export round-trips (item 3)", () => {
  it("records the owner and only the fields that were set; plan of the export is no change, exit 0", async () => {
    const qs = await runCli(["config", "apply", "--source", "quickstart", path.join("examples", "quickstart")], env);
    expect(qs.code, qs.stderr).toBe(0);
    await writeFile(
      f("routed.yaml"),
      "apiVersion: svc/v1\nkind: Provider\nmetadata:\n  name: up38\nspec:\n  type: openai\n  baseUrl: http://127.0.0.1:9/v1\n  models:\n    - name: m38\n---\n" +
        "apiVersion: svc/v1\nkind: Model\nmetadata:\n  name: routed38\nspec:\n  router:\n    deployments:\n      - provider: up38\n        model: m38\n",
    );
    const ap = await runCli(["config", "apply", f("routed.yaml")], env);
    expect(ap.code, ap.stderr).toBe(0);

    const ex = await runCli(["config", "export", "-o", f("export.yaml")], env);
    expect(ex.code, ex.stderr).toBe(0);
    const text = await import("node:fs/promises").then((fs) => fs.readFile(f("export.yaml"), "utf8"));
    const routed = text.split("---\n").find((d) => d.includes("name: routed38"))!;
    expect(routed).toContain("owner: config:default");
    for (const field of ["contextSize", "threads", "parallel", "idleUnloadSeconds", "embeddings"]) expect(routed).not.toContain(field);
    expect(text.split("---\n").find((d) => d.includes("name: svc-tiny"))).toContain("owner: config:quickstart");

    const plan = await runCli(["config", "plan", "--detailed-exitcode", f("export.yaml")], env);
    expect(plan.code, plan.stdout + plan.stderr).toBe(0);
    expect(plan.stdout).toMatch(/^No changes: \d+ unchanged/m);

    const all = await runCli(["config", "export", "--show-defaults"], env);
    expect(all.stdout.split("---\n").find((d) => d.includes("name: routed38"))).toContain("contextSize");
  });
});
