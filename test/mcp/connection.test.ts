// The connection is held while enabled: a service process that dies is restarted with backoff
// and its tools come back; autoConnect: false connects on the first call naming one of its tools.
import path from "node:path";
import { readFile, rm } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";
import { postJson, until } from "../helpers/http";
import { apply, call, mcpDoc, node, tiny, waitReason } from "./helpers";

describe("holding the connection", () => {
  let s: TestSvc;
  let dir: string;
  beforeAll(async () => {
    s = await startTestSvc();
    dir = await tempDir("svc-mcp-conn-");
  });
  afterAll(async () => {
    await s?.stop();
  });

  it("reconnects after the service process dies", async () => {
    const pidfile = path.join(dir, "pid");
    await apply(s, [mcpDoc("phoenix", { transport: "stdio", command: node, args: [tiny, "--pidfile", pidfile] })]);
    await waitReason(s, "phoenix", "Connected");
    const first = Number(await readFile(pidfile, "utf8"));
    await rm(pidfile);
    process.kill(first, "SIGKILL");
    await waitReason(s, "phoenix", "ConnectionRefused"); // lost; tools kept while reconnecting
    expect(s.svc.engines.tools!.get("phoenix_echo")).toBeTruthy();
    const down = await call(s, "phoenix_echo", { message: "x" });
    // while it is down a call fails with 503 service_unavailable; a reconnect may already have
    // happened by then, and the call is answered: both outcomes are checked in full
    const outcome = down.status === 503 ? { status: 503, code: down.json.error?.code } : { status: down.status, text: down.json.result?.content?.[0]?.text };
    expect(outcome).toEqual(down.status === 503 ? { status: 503, code: "service_unavailable" } : { status: 200, text: "echo: x" });
    await waitReason(s, "phoenix", "Connected", 20_000);
    const second = Number(await readFile(pidfile, "utf8"));
    expect(second).not.toBe(first);
    expect((await call(s, "phoenix_echo", { message: "again" })).json.result.content[0].text).toBe("echo: again");
  });

  it("autoConnect: false stays idle until a call names one of its tools", async () => {
    const pidfile = path.join(dir, "lazy-pid");
    await apply(s, [mcpDoc("lazy", { transport: "stdio", command: node, args: [tiny, "--pidfile", pidfile], autoConnect: false })]);
    const c = await waitReason(s, "lazy", "NotConnected");
    expect(c.status).toBe("True");
    expect(s.svc.engines.tools!.get("lazy_echo")).toBeUndefined();
    await expect(readFile(pidfile, "utf8")).rejects.toThrow(); // nothing started
    const r = await call(s, "lazy_echo", { message: "wake up" });
    expect(r.status).toBe(200);
    expect(r.json.result.content[0].text).toBe("echo: wake up");
    await waitReason(s, "lazy", "Connected");
  });

  it("deleting a service whose discovery is still under way ends its process at once", async () => {
    const pidfile = path.join(dir, "hang-pid");
    await apply(s, [mcpDoc("stuck", { transport: "stdio", command: node, args: [tiny, "--hang", "--pidfile", pidfile], discoveryTimeoutSeconds: 600 })]);
    await waitReason(s, "stuck", "Connecting");
    let pid = 0;
    await until(() => {
      void readFile(pidfile, "utf8").then((t) => (pid = Number(t)), () => undefined);
      return pid > 0;
    }, 10_000);
    const del = await postJson(`${s.url}/admin/config/apply`, { documents: [mcpDoc("lazy", { transport: "stdio", command: node, args: [tiny], autoConnect: false }), mcpDoc("phoenix", { transport: "stdio", command: node, args: [tiny] })], prune: true, confirm: true, source: "mcp-test" });
    expect(del.status).toBe(200);
    await until(() => !s.svc.store.get("McpServer", "stuck"), 10_000);
    await until(() => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    }, 10_000);
  });
});
