// What a failed call says when the connection ends under it for a reason on svc's side: an answer
// larger than the stdio message limit (svc drops the connection; the service did not close it),
// and an McpServer changed or deleted while the call runs. Before, both said "tool service X
// closed the connection during the call", which blamed the service and hid the cause.
import path from "node:path";
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";
import { postJson, until } from "../helpers/http";
import { alive, apply, call, mcpDoc, node, rough, tiny, waitReason } from "./helpers";

describe("calls that end with the connection", () => {
  let s: TestSvc;
  let dir: string;
  beforeAll(async () => {
    s = await startTestSvc();
    dir = await tempDir("svc-mcp-callerr-");
  });
  afterAll(async () => {
    await s?.stop();
  });
  /** requests svc's MCP client has sent to the service and not had answered (SDK internals) */
  const inFlight = (service: string): number => (s.svc.engines.mcp as any).held.get(service)?.conn.client?._responseHandlers?.size ?? 0;

  it("a large answer passes; one over the 10 MB stdio limit says so, and the service comes back", async () => {
    await apply(s, [mcpDoc("rough", { transport: "stdio", command: node, args: [rough], toolCallTimeoutSeconds: 50 })]);
    await waitReason(s, "rough", "Connected");
    const big = await call(s, "rough_big", { bytes: 5_000_000 });
    expect(big.status).toBe(200);
    expect(big.json.result.content[0].text.length).toBe(5_000_000);

    const huge = await call(s, "rough_big", { bytes: 11_000_000 });
    expect(huge.status).toBe(503);
    expect(huge.json.error.code).toBe("service_unavailable");
    expect(huge.json.error.message).toMatch(/larger than .*10 MB/);
    expect(huge.json.error.message).not.toMatch(/rough closed the connection/);

    await until(() => s.svc.engines.mcp!.state("rough")?.phase === "ready", 30_000, 50);
    expect((await call(s, "rough_echo", { message: "after" })).json.result.content[0].text).toBe("echo: after");
  }, 90_000);

  it("a call running when its McpServer is changed, then deleted, fails saying so; the old processes end", async () => {
    const pidfile = path.join(dir, "pid");
    const spec = { transport: "stdio", command: node, args: [tiny, "--pidfile", pidfile], toolCallTimeoutSeconds: 50 };
    await apply(s, [mcpDoc("busy", spec)]);
    await waitReason(s, "busy", "Connected");
    const pid1 = Number(await readFile(pidfile, "utf8"));

    let pending = call(s, "busy_slow", {});
    await until(() => inFlight("busy") > 0, 15_000); // the call is out (nothing answers it)
    await apply(s, [mcpDoc("busy", { ...spec, args: [...spec.args, "--changed"] })]);
    let r = await pending;
    expect(r.status).toBe(503);
    expect(r.json.error.message).toMatch(/McpServer busy was changed or removed/);
    await until(() => !alive(pid1), 15_000);

    await until(() => s.svc.engines.mcp!.state("busy")?.phase === "ready", 30_000, 50);
    const pid2 = Number(await readFile(pidfile, "utf8"));
    expect(pid2).not.toBe(pid1);
    pending = call(s, "busy_slow", {});
    await until(() => inFlight("busy") > 0, 15_000);
    await postJson(`${s.url}/admin/config/apply`, { documents: [mcpDoc("rough", { transport: "stdio", command: node, args: [rough], toolCallTimeoutSeconds: 50 })], source: "mcp-test", prune: true, confirm: true });
    r = await pending;
    expect(r.status).toBe(503);
    expect(r.json.error.message).toMatch(/McpServer busy was changed or removed/);
    await until(() => !alive(pid2), 15_000);
  }, 90_000);
});
