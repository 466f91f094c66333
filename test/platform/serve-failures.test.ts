// `svc serve` start-up failures, through the real command: each names what failed, where, and
// what to do, with no stack trace, and exits non-zero.
import { createServer, type Server } from "node:net";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli";
import { tempDir } from "../helpers/svc";
import { DEAD_PORT } from "../helpers/services";

const serve = (home: string, ...args: string[]) => runCli(["serve", "--home", home, "--no-quickstart", ...args], { SVC_PORT: undefined, SVC_DATABASE_URL: undefined, SVC_REDIS_URL: undefined });

function noStack(stderr: string): void {
  expect(stderr).not.toMatch(/^\s+at .+:\d+:\d+\)?$/m);
}

describe("svc serve start-up failures", () => {
  let blocker: Server | undefined;
  afterAll(() => blocker?.close());

  it("a store that is not a SQLite database: names the file, says so, points to svc doctor", async () => {
    const home = await tempDir("svc-corrupt-");
    const store = path.join(home, "svc.db");
    await writeFile(store, "not a database, only text ".repeat(200));
    const r = await serve(home, "--port", "0");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`the store ${store} is not a SQLite database`);
    expect(r.stderr).toContain(`svc doctor --home ${home}`);
    expect(r.stderr).not.toContain("svc listening");
    noStack(r.stderr);
    // and svc doctor, as suggested, diagnoses the same file
    const d = await runCli(["doctor", "--home", home, "--port", String(DEAD_PORT)]);
    expect(d.code).toBe(1);
    expect(d.stdout).toContain(store);
  }, 120_000);

  it("a port in use: names the address and the options to pick another", async () => {
    blocker = createServer();
    await new Promise<void>((resolve) => blocker!.listen(0, "127.0.0.1", resolve));
    const port = (blocker.address() as { port: number }).port;
    const r = await serve(await tempDir("svc-port-"), "--port", String(port));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`http://127.0.0.1:${port} is in use by another process`);
    expect(r.stderr).toMatch(/--port N \(or SVC_PORT\)/);
    noStack(r.stderr);
  }, 120_000);

  it("a data dir that cannot be created: names it and the option to use another", async () => {
    const base = await tempDir("svc-home-");
    await writeFile(path.join(base, "file"), "x");
    const home = path.join(base, "file", "svc");
    const r = await serve(home, "--port", "0");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`cannot create the data dir ${home} (ENOTDIR)`);
    expect(r.stderr).toContain("--home");
    noStack(r.stderr);
  }, 120_000);

  it("an invalid start-up config: names the file and the error, changes nothing", async () => {
    const home = await tempDir("svc-config-");
    const bad = path.join(home, "bad.yaml");
    await writeFile(bad, "apiVersion: svc/v1\nkind: Nope\nmetadata: {name: x}\nspec: {}\n");
    const r = await serve(home, "--port", "0", "--config", bad);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("the start-up config (--config) is not valid");
    expect(r.stderr).toContain(`${bad}:2`);
    expect(r.stderr).toContain('unknown kind "Nope"');
    noStack(r.stderr);
  }, 120_000);
});
