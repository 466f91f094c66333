// Secret references resolve to what they name and nothing else (engines/secrets/refs.ts):
//   - `env:NAME` is a variable set in svc's environment. `env:constructor`, `env:toString`,
//     `env:__proto__` (valid names by the reference pattern) used to resolve to process.env's
//     inherited members (a function, Object.prototype): the reference looked configured, and a
//     webhook signed with it threw in the delivery pass, on every pass (the row stays due).
//   - `file:/path` is a regular file of secret size, read without blocking. `file:/dev/zero` used
//     to read until the process aborted (out of memory), and a FIFO blocked the event loop for
//     good; an organization key with manage_keys reaches this with its webhook.secret (the
//     reference is resolved while the request is served, to refuse one that does not resolve).
// The file cases that used to hang or crash run in a child process with a deadline (and a memory
// cap), so a regression fails the test instead of taking the test run down.
import { spawnSync } from "node:child_process";
import { mkdirSync, symlinkSync, truncateSync, writeFileSync, rmSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clearSecretCache, describeMissing, resolveSecretRef } from "../../engines/secrets/refs";
import { startEnv, type Env } from "../gateway/fixtures";
import { tempDir } from "../helpers/svc";

const REFS = path.resolve(__dirname, "../../dist/engines/secrets/refs.js");

/** resolveSecretRef(ref) in a child (built dist/), 5 s and ~1.5 GB of address space at most. */
function resolveInChild(ref: string): { finished: boolean; value?: unknown } {
  const script = `const m = await import(${JSON.stringify(REFS)}); process.stdout.write(JSON.stringify({ v: m.resolveSecretRef(process.argv[1]) ?? null }));`;
  const r = spawnSync("sh", ["-c", 'ulimit -v 1500000; exec "$0" --input-type=module -e "$1" "$2"', process.execPath, script, ref], { timeout: 5_000, encoding: "utf8" });
  if (r.status !== 0 || !r.stdout) return { finished: false };
  return { finished: true, value: JSON.parse(r.stdout).v };
}

describe("env: references name variables, not process.env's inherited members", () => {
  it("resolves no inherited member, and says the variable is not set", () => {
    for (const name of ["constructor", "toString", "valueOf", "hasOwnProperty", "__proto__", "__defineGetter__"]) {
      expect(resolveSecretRef(`env:${name}`), name).toBeUndefined();
      expect(resolveSecretRef(`env:${name}`, {}), name).toBeUndefined();
      expect(describeMissing(`env:${name}`), name).toContain("is not set");
    }
    // set variables keep resolving
    expect(resolveSecretRef("env:SVC_TEST_SECRET_X", { SVC_TEST_SECRET_X: "value-123" })).toBe("value-123");
  });
});

describe("file: references read regular files of secret size only", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await tempDir("svc-secret-ref-");
    clearSecretCache();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("refuses a FIFO without blocking, and a device such as /dev/zero without reading it", () => {
    const fifo = path.join(dir, "fifo");
    expect(spawnSync("mkfifo", [fifo]).status).toBe(0);
    expect(resolveInChild(`file:${fifo}`)).toEqual({ finished: true, value: null });
    expect(resolveInChild("file:/dev/zero")).toEqual({ finished: true, value: null });
    expect(describeMissing("file:/dev/zero")).toContain("/dev/zero");
  });

  it("refuses a file far larger than any secret (a model file named by mistake or on purpose)", () => {
    const big = path.join(dir, "big");
    writeFileSync(big, "");
    truncateSync(big, 2 * 1024 * 1024); // sparse: no disk used
    expect(resolveSecretRef(`file:${big}`)).toBeUndefined();
  });

  it("keeps reading an ordinary secret file, also through a symlink (mounted secrets are links)", () => {
    const real = path.join(dir, "real");
    writeFileSync(real, "s3cret-value\n", { mode: 0o600 });
    mkdirSync(path.join(dir, "run"));
    symlinkSync(real, path.join(dir, "run", "token"));
    expect(resolveSecretRef(`file:${real}`)).toBe("s3cret-value");
    expect(resolveSecretRef(`file:${path.join(dir, "run", "token")}`)).toBe("s3cret-value");
    expect(resolveSecretRef(`file:${dir}`)).toBeUndefined(); // a directory
  });
});

describe("the key API refuses a webhook secret naming an inherited member", () => {
  let env: Env;
  beforeAll(async () => {
    env = await startEnv();
  });
  afterAll(async () => {
    await env?.stop();
  });

  it("400 naming webhook.secret, as for any reference that does not resolve", async () => {
    const made = await env.api("POST", "/v1/api-keys", { name: "hooked", webhook: { url: "http://127.0.0.1:9/hook", events: ["key.revoked"], secret: "env:constructor" } });
    expect(made.status, JSON.stringify(made.json)).toBe(400);
    expect(made.json.error.param).toBe("webhook.secret");
  });
});
