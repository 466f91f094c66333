// svc as an MCP server: the SDK's own Client connects to /mcp (Streamable HTTP), lists and calls
// the exposed tools and hears list_changed; server-everything upstream over Streamable HTTP;
// authentication like inference (loopback rule, keys, permissions.actions needs tools:call).
import path from "node:path";
import { writeFile } from "node:fs/promises";
import type { ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { startEnv, type Env } from "../gateway/fixtures";
import { tempDir } from "../helpers/svc";
import { until } from "../helpers/http";
import { apply, call, everything, mcpDoc, node, reportPort, startChild, tiny, tools, waitReason } from "./helpers";

describe("exposed tools and the /mcp endpoint", () => {
  let env: Env;
  let listFile: string;
  let upstream: ChildProcess;
  beforeAll(async () => {
    env = await startEnv();
    const dir = await tempDir("svc-mcp-exp-");
    listFile = path.join(dir, "tools.json");
    await writeFile(listFile, JSON.stringify(["echo", "write"]));
    // server-everything's Streamable HTTP mode listens on PORT (default 3001) and logs the port it
    // was given; with PORT=0 the kernel picks one, which the preload prints
    const started = await startChild(["--import", reportPort, everything, "streamableHttp"], { PORT: "0" }, /svc-test bound port (\d+)/);
    upstream = started.child;
    const r = await apply(env.svc, [
      mcpDoc("tiny", { transport: "stdio", command: node, args: [tiny, "--tools", listFile] }),
      mcpDoc("remote", { transport: "http", url: `http://127.0.0.1:${started.port}/mcp` }),
    ]);
    expect(r.status).toBe(200);
    await waitReason(env.svc, "tiny", "Connected");
    await waitReason(env.svc, "remote", "Connected");
  });
  afterAll(async () => {
    await env?.stop();
    upstream?.kill();
  });

  it("server-everything over Streamable HTTP: its tools are in the catalog and callable", async () => {
    const r = await call(env.svc, "remote_echo", { message: "via http" });
    expect(r.status).toBe(200);
    expect(r.json.result.content[0].text).toBe("Echo: via http");
    const sum = await env.svc.svc.engines.tools!.call("remote_get-sum", { a: 2, b: 3 });
    expect(sum.content[0].text).toMatch(/5/);
  });

  it("the SDK Client lists and calls the exposed tools at /mcp, and hears list_changed", async () => {
    const client = new Client({ name: "test", version: "1.0.0" });
    let changed = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      changed++;
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${env.url}/mcp`)));
    try {
      const listed = (await client.listTools()).tools.map((t) => t.name);
      expect(listed).toEqual(expect.arrayContaining(["svc_time", "svc_models", "tiny_echo", "remote_echo"]));
      expect(listed).not.toContain("tiny_write"); // write-capable: not exposed by default
      const r = await client.callTool({ name: "tiny_echo", arguments: { message: "mcp client" } });
      expect(r.content).toEqual([{ type: "text", text: "echo: mcp client" }]);
      await expect(client.callTool({ name: "tiny_write", arguments: {} })).rejects.toThrow(/tool_not_exposable/);
      await expect(client.callTool({ name: "tiny_echo", arguments: {} })).rejects.toThrow(/message/);

      await writeFile(listFile, JSON.stringify(["echo", "write", "progress"]));
      await until(() => changed > 0, 15_000);
      const again = (await client.listTools()).tools.map((t) => t.name);
      expect(again).toContain("tiny_progress");
    } finally {
      await client.close();
    }
  });

  it("/mcp answers a plain tools/call as application/json; a call with a progress token keeps SSE and gets its progress", async () => {
    await writeFile(listFile, JSON.stringify(["echo", "write", "progress"]));
    await until(() => !!env.svc.svc.engines.tools?.get("tiny_progress"), 15_000);
    const types: string[] = [];
    const recording: typeof fetch = async (url, init) => {
      const r = await fetch(url, init);
      if (init?.method === "POST" && String(init.body).includes('"tools/call"')) types.push(r.headers.get("content-type") ?? "");
      return r;
    };
    const client = new Client({ name: "test", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${env.url}/mcp`), { fetch: recording }));
    try {
      const plain = await client.callTool({ name: "tiny_echo", arguments: { message: "as json" } });
      expect(plain.content).toEqual([{ type: "text", text: "echo: as json" }]);
      const progress: number[] = [];
      const slow = await client.callTool({ name: "tiny_progress", arguments: { steps: 3, everyMs: 40 } }, undefined, { onprogress: (p) => void progress.push(p.progress) });
      expect(slow.content).toEqual([{ type: "text", text: "done after 3 steps" }]);
      // the last step's notification may race the result on svc's relay: the earlier ones arrive first
      expect(progress.slice(0, 2)).toEqual([1, 2]);
      expect(types).toEqual([expect.stringMatching(/^application\/json/), expect.stringMatching(/^text\/event-stream/)]);
      // the JSON answer keeps the protocol's errors: a naming mistake is InvalidParams
      await expect(client.callTool({ name: "tiny_nothing", arguments: {} })).rejects.toThrow(/-32602.*tool_not_found/);
      expect(types[2]).toMatch(/^application\/json/);
    } finally {
      await client.close();
    }
  });

  it("a plain /mcp call the client cancels (notifications/cancelled) is aborted and audited as cancelled", async () => {
    await writeFile(listFile, JSON.stringify(["echo", "write", "progress", "slow"]));
    await until(() => !!env.svc.svc.engines.tools?.get("tiny_slow"), 15_000);
    const key = await env.key({});
    const bearer = { authorization: `Bearer ${key.secret}` };
    const client = new Client({ name: "test", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${env.url}/mcp`), { requestInit: { headers: bearer } }));
    try {
      const ac = new AbortController();
      const pending = client.callTool({ name: "tiny_slow", arguments: {} }, undefined, { signal: ac.signal });
      setTimeout(() => ac.abort("stop"), 200);
      await expect(pending).rejects.toThrow();
      let entries: any[] = [];
      await until(() => {
        void fetch(`${env.url}/v1/audit-logs?action=tools.call`, { headers: { ...bearer, "x-api-key-id": key.id } })
          .then((r) => r.json())
          .then((j: any) => (entries = j?.data ?? []));
        return entries.length >= 1;
      }, 10_000, 100);
      expect(entries.map((e) => [e.metadata?.tool, e.status])).toEqual([["tiny_slow", "cancelled"]]);
    } finally {
      await client.close();
    }
  });

  it("keys: permissions.actions without tools:call is 403; with it, or without an actions list, allowed; a bad key is 401", async () => {
    const none = await env.key({ permissions: { actions: ["chat:completions"] } });
    const bearer = (k: string) => ({ authorization: `Bearer ${k}` });
    const denied = await fetch(`${env.url}/mcp/tools`, { headers: bearer(none.secret) });
    expect(denied.status).toBe(403);
    expect(((await denied.json()) as any).error.code).toBe("permission_denied");
    const c = await call(env.svc, "tiny_echo", { message: "x" }, bearer(none.secret));
    expect(c.status).toBe(403);

    const yes = await env.key({ permissions: { actions: ["tools:call"] } });
    expect((await call(env.svc, "tiny_echo", { message: "x" }, bearer(yes.secret))).status).toBe(200);
    const plain = await env.key({});
    expect((await tools(env.svc, bearer(plain.secret))).length).toBeGreaterThan(0);

    const bad = await fetch(`${env.url}/mcp/tools`, { headers: bearer("sk-svc-notakey") });
    expect(bad.status).toBe(401);
    expect(((await bad.json()) as any).error.code).toBe("invalid_api_key");

    // the same rules at /mcp
    const t = new StreamableHTTPClientTransport(new URL(`${env.url}/mcp`), { requestInit: { headers: bearer(none.secret) } });
    await expect(new Client({ name: "t", version: "1" }).connect(t)).rejects.toThrow(/permission_denied/);
    const ok = new Client({ name: "t", version: "1" });
    await ok.connect(new StreamableHTTPClientTransport(new URL(`${env.url}/mcp`), { requestInit: { headers: bearer(yes.secret) } }));
    expect((await ok.listTools()).tools.length).toBeGreaterThan(0);
    await ok.callTool({ name: "tiny_echo", arguments: { message: "audited" } });
    await ok.close();

    // calls made with a key are in its audit log: action tools.call, the tool in metadata
    let entries: any[] = [];
    await until(() => {
      void fetch(`${env.url}/v1/audit-logs?action=tools.call`, { headers: { ...bearer(yes.secret), "x-api-key-id": yes.id } })
        .then((r) => r.json())
        .then((j: any) => (entries = j?.data ?? []));
      return entries.length >= 2;
    }, 10_000, 100);
    expect(entries.map((e) => e.metadata?.tool)).toEqual(["tiny_echo", "tiny_echo"]);
    expect(entries.every((e) => e.status === "success" && e.action === "tools.call")).toBe(true);
  });

  it("without a key, off loopback rules: unauthenticated loopback can be turned off", async () => {
    await apply(env.svc, [{ apiVersion: "svc/v1", kind: "Server", metadata: { name: "server" }, spec: { allowUnauthenticatedLoopback: false } }]);
    await until(() => env.svc.svc.server.allowUnauthenticatedLoopback === false, 10_000);
    const r = await fetch(`${env.url}/mcp/tools`);
    expect(r.status).toBe(401);
    const withKey = await fetch(`${env.url}/mcp/tools`, { headers: { authorization: `Bearer ${(await env.key({})).secret}` } });
    expect(withKey.status).toBe(200);
  });
});
