// The tool-service failures, each its own Ready=False reason with a hint, seen through real
// servers: the fixture (test/mcp/fixtures/tiny-server.mjs) changes its tool list on demand and
// sends list_changed; a server that never answers initialize; calls that time out, are refused,
// or name a tool that left the catalog; a bearer-protected HTTP server.
import path from "node:path";
import { writeFile } from "node:fs/promises";
import type { ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";
import { until } from "../helpers/http";
import { apply, call, mcpDoc, node, ready, startChild, tiny, tools, waitReason } from "./helpers";

describe("tool-service failures", () => {
  let s: TestSvc;
  let dir: string;
  let listFile: string;
  const children: ChildProcess[] = [];
  beforeAll(async () => {
    dir = await tempDir("svc-mcp-fail-");
    listFile = path.join(dir, "tools.json");
    await writeFile(listFile, JSON.stringify(["echo", "write", "deny", "slow", "progress", "appui"]));
    s = await startTestSvc();
  });
  afterAll(async () => {
    await s?.stop();
    for (const c of children) c.kill();
  });

  it("a refresh replaces the catalog: a tool removed upstream is gone from /mcp/tools, and calling it is ToolGone", async () => {
    await apply(s, [mcpDoc("tiny", { transport: "stdio", command: node, args: [tiny, "--tools", listFile], toolCallTimeoutSeconds: 2, tools: { write: { expose: true }, appui: { expose: true } } })]);
    await waitReason(s, "tiny", "Connected");
    let names = (await tools(s)).map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(["tiny_echo", "tiny_write", "tiny_deny"]));
    expect(names).not.toContain("tiny_appui"); // app-only: never exposed, even with expose: true
    const app = await call(s, "tiny_appui", {});
    expect(app.status).toBe(403);
    expect(app.json.error.code).toBe("tool_not_exposable");

    await writeFile(listFile, JSON.stringify(["echo", "deny", "slow", "progress"])); // "write" removed upstream
    await until(() => !s.svc.engines.tools!.get("tiny_write"), 15_000);
    names = (await tools(s)).map((t) => t.name);
    expect(names).not.toContain("tiny_write");
    expect(names).toContain("tiny_echo");

    const gone = await call(s, "tiny_write", {});
    expect(gone.status).toBe(410);
    expect(gone.json.error.code).toBe("tool_gone");
    const c = await waitReason(s, "tiny", "ToolGone");
    expect(c.status).toBe("False");
    expect(c.message).toMatch(/hint: /);
    await expect(s.svc.engines.tools!.call("tiny_write", {})).rejects.toMatchObject({ code: "tool_gone" });

    // a successful call clears the call failure
    const ok = await call(s, "tiny_echo", { message: "back" });
    expect(ok.json.result.content[0].text).toBe("echo: back");
    await waitReason(s, "tiny", "Connected");
  });

  it("a call the service refuses is execution_denied (403) and ExecutionDenied in status", async () => {
    const r = await call(s, "tiny_deny", {});
    expect(r.status).toBe(403);
    expect(r.json.error).toMatchObject({ code: "execution_denied", type: "permission_error" });
    expect(r.json.error.message).toMatch(/access denied/);
    const c = await waitReason(s, "tiny", "ExecutionDenied");
    expect(c.message).toMatch(/hint: /);
    await call(s, "tiny_echo", { message: "x" });
    await waitReason(s, "tiny", "Connected");
  });

  it("the tool-call timeout ends a call that sends nothing (504 tool_timeout), and progress notifications restart it", async () => {
    const r = await call(s, "tiny_slow", {});
    expect(r.status).toBe(504);
    expect(r.json.error.code).toBe("tool_timeout");
    // 10 progress notifications 300 ms apart: 3 s in all, longer than the 2 s timeout
    const p = await call(s, "tiny_progress", { steps: 10, everyMs: 300 });
    expect(p.status).toBe(200);
    expect(p.json.result.content[0].text).toBe("done after 10 steps");
    const seen: number[] = [];
    const direct = await s.svc.engines.tools!.call("tiny_progress", { steps: 3, everyMs: 50 }, { onProgress: (x) => seen.push(x.progress) });
    expect(direct.isError).toBe(false);
    expect(seen[0]).toBe(1); // progress reaches the caller (the last one may race the result)
  });

  it("a server that never answers initialize is DiscoveryTimeout", async () => {
    await apply(s, [mcpDoc("mute", { transport: "stdio", command: node, args: [tiny, "--hang"], discoveryTimeoutSeconds: 1 })]);
    const c = await waitReason(s, "mute", "DiscoveryTimeout");
    expect(c.status).toBe("False");
    expect(c.message).toMatch(/within 1 s.*retrying in \d+ s.*hint: /);
  });

  it("a command that does not exist is ConnectionRefused; an http endpoint nobody listens on too", async () => {
    await apply(s, [
      mcpDoc("nocmd", { transport: "stdio", command: "/nonexistent/mcp-server" }),
      mcpDoc("noport", { transport: "http", url: "http://127.0.0.1:9/mcp" }),
    ]);
    const a = await waitReason(s, "nocmd", "ConnectionRefused");
    expect(a.message).toMatch(/command not found/);
    const b = await waitReason(s, "noport", "ConnectionRefused");
    expect(b.message).toMatch(/hint: /);
  });

  it("a service whose tool schemas are invalid is SchemaError; the valid tools stay usable", async () => {
    const f = path.join(dir, "bad.json");
    await writeFile(f, JSON.stringify(["echo", "badschema"]));
    await apply(s, [mcpDoc("bad", { transport: "stdio", command: node, args: [tiny, "--tools", f] })]);
    const c = await waitReason(s, "bad", "SchemaError");
    expect(c.message).toMatch(/badschema/);
    expect(s.svc.engines.tools!.get("bad_badschema")).toBeUndefined();
    expect((await call(s, "bad_echo", { message: "still" })).json.ok).toBe(true);
  });

  it("a service with no tools is Ready=True with reason NoTools (a warning)", async () => {
    const f = path.join(dir, "none.json");
    await writeFile(f, "[]");
    await apply(s, [mcpDoc("empty", { transport: "stdio", command: node, args: [tiny, "--tools", f] })]);
    const c = await waitReason(s, "empty", "NoTools");
    expect(c.status).toBe("True");
  });

  it("a secret reference that does not resolve is SecretMissing", async () => {
    await apply(s, [mcpDoc("nosecret", { transport: "stdio", command: node, args: [tiny], envFrom: { TOKEN: "env:SVC_TEST_UNSET_VARIABLE_X" } })]);
    const c = await waitReason(s, "nosecret", "SecretMissing");
    expect(c.message).toMatch(/SVC_TEST_UNSET_VARIABLE_X is not set/);
  });

  it("an HTTP service that wants a bearer: wrong token is AuthRejected; the right one via env: is Ready", async () => {
    const { child, port } = await startChild([tiny, "--http", "--token", "s3cret-token"]);
    children.push(child);
    process.env.SVC_TEST_MCP_WRONG = "not-it";
    process.env.SVC_TEST_MCP_RIGHT = "s3cret-token";
    const url = `http://127.0.0.1:${port}/mcp`;
    await apply(s, [mcpDoc("guarded", { transport: "http", url, auth: { type: "token", token: "env:SVC_TEST_MCP_WRONG" } })]);
    const bad = await waitReason(s, "guarded", "AuthRejected");
    expect(bad.status).toBe("False");
    expect(bad.message).toMatch(/HTTP 401.*hint: /);
    expect(JSON.stringify(s.svc.store.get("McpServer", "guarded")!.status)).not.toContain("not-it");

    await apply(s, [mcpDoc("guarded", { transport: "http", url, auth: { type: "token", token: "env:SVC_TEST_MCP_RIGHT" } })]);
    await waitReason(s, "guarded", "Connected");
    const r = await call(s, "guarded_echo", { message: "over http" });
    expect(r.json.result.content[0].text).toBe("echo: over http");
    expect(ready(s, "guarded")!.status).toBe("True");
  });
});

describe("OAuth client credentials", () => {
  let s: TestSvc;
  let child: ChildProcess;
  afterAll(async () => {
    await s?.stop();
    child?.kill();
  });

  it("gets a token with the client-credentials grant and connects; a wrong secret is AuthRejected", async () => {
    s = await startTestSvc();
    const started = await startChild([tiny, "--http", "--oauth", "svc-client:client-secret-1"]);
    child = started.child;
    const base = `http://127.0.0.1:${started.port}`;
    process.env.SVC_TEST_OAUTH_WRONG = "nope";
    process.env.SVC_TEST_OAUTH_RIGHT = "client-secret-1";
    const spec = (ref: string) => ({ transport: "http", url: `${base}/mcp`, auth: { type: "oauth", clientId: "svc-client", clientSecret: ref, issuer: base } });
    await apply(s, [mcpDoc("oauthed", spec("env:SVC_TEST_OAUTH_WRONG"))]);
    const bad = await waitReason(s, "oauthed", "AuthRejected");
    expect(bad.message).toMatch(/hint: /);
    await apply(s, [mcpDoc("oauthed", spec("env:SVC_TEST_OAUTH_RIGHT"))]);
    await waitReason(s, "oauthed", "Connected");
    expect((await call(s, "oauthed_echo", { message: "with a token" })).json.result.content[0].text).toBe("echo: with a token");
  });
});
