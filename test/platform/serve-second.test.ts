// A second `svc serve` on a data dir another `svc serve` runs on must refuse to start, clearly:
// both would run the controllers on one store and fold each other's reservation journals
// (engines/gateway/limits/wal.ts), and the second would take over server.json.
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { until } from "../helpers/http";
import { LISTENING, spawnServe, startServeChild, type ServeChild } from "../helpers/serve-child";
import { tempDir } from "../helpers/svc";

const env = { SVC_PORT: undefined, SVC_DATABASE_URL: undefined, SVC_REDIS_URL: undefined };
// every server a test starts, stopped at the end (one variable per server: the second test's
// must not overwrite the first test's, which then kept running after the suite)
let first: ServeChild | undefined;
let killed: ServeChild | undefined;
let again: ServeChild | undefined;
afterAll(async () => {
  await first?.stop();
  await killed?.stop();
  await again?.stop();
});

describe("svc serve on a data dir already served", () => {
  it("refuses with a clear message, and leaves the first server and its server.json alone", async () => {
    const home = await tempDir("svc-second-");
    first = await startServeChild(["--port", "0", "--home", home, "--no-quickstart"], env);
    const infoBefore = await readFile(path.join(home, "server.json"), "utf8");
    // spawned, not run to its end: without the refusal it would serve (and never exit)
    const second = spawnServe(["--home", home, "--no-quickstart", "--port", "0"], env);
    await until(() => second.child.exitCode !== null || LISTENING.test(second.stderr()), 60_000).catch(() => undefined);
    if (second.child.exitCode === null) second.child.kill("SIGTERM");
    const r = { code: await second.exited, stderr: second.stderr() };
    expect(r.stderr).not.toContain("svc listening");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("another svc serve");
    expect(r.stderr).toContain(String(first.child.pid));
    expect(r.stderr).not.toMatch(/^\s+at .+:\d+:\d+\)?$/m);
    expect(await readFile(path.join(home, "server.json"), "utf8")).toBe(infoBefore);
    // the first one still serves
    const h = await fetch(`${first.url}/health`);
    expect(h.status).toBe(200);
  }, 120_000);

  it("after the first server is killed (-9) or stopped, the data dir can be served again", async () => {
    const home = await tempDir("svc-second-stale-");
    killed = await startServeChild(["--port", "0", "--home", home, "--no-quickstart"], env);
    await killed.kill9(); // leaves its lock and server.json behind
    again = await startServeChild(["--port", "0", "--home", home, "--no-quickstart"], env);
    const info = JSON.parse(await readFile(path.join(home, "server.json"), "utf8"));
    expect(info.pid).toBe(again.child.pid);
    expect(await again.stop()).toBe(0);
    expect(existsSync(path.join(home, "serve.lock"))).toBe(false);
    expect(existsSync(path.join(home, "server.json"))).toBe(false);
  }, 120_000);
});
