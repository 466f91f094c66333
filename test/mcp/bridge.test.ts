// `svc mcp`: the SDK's Client spawns it as a child process (StdioClientTransport), lists and
// calls the exposed tools of the running svc, hears list_changed; the key in SVC_MCP_ACCESS_KEY
// is used; and with no svc running it says so on stderr and exits non-zero.
import path from "node:path";
import { writeFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { startEnv, type Env } from "../gateway/fixtures";
import { tempDir } from "../helpers/svc";
import { repoRoot, runCli } from "../helpers/cli";
import { until } from "../helpers/http";
import { apply, mcpDoc, node, tiny, waitReason } from "./helpers";
import { DEAD_PORT } from "../helpers/services";

const bin = path.join(repoRoot, "bin", "svc.mjs");

function bridge(port: number, env: Record<string, string> = {}) {
  return new StdioClientTransport({ command: node, args: [bin, "mcp", "--port", String(port)], env: { ...(process.env as Record<string, string>), ...env }, stderr: "pipe" });
}

describe("svc mcp (stdio bridge)", () => {
  let env: Env;
  let listFile: string;
  beforeAll(async () => {
    env = await startEnv();
    const dir = await tempDir("svc-mcp-bridge-");
    listFile = path.join(dir, "tools.json");
    await writeFile(listFile, JSON.stringify(["echo"]));
    await apply(env.svc, [mcpDoc("tiny", { transport: "stdio", command: node, args: [tiny, "--tools", listFile] })]);
    await waitReason(env.svc, "tiny", "Connected");
  });
  afterAll(async () => {
    await env?.stop();
  });

  it("lists and calls the exposed tools and forwards list_changed", async () => {
    const client = new Client({ name: "desktop", version: "1.0.0" });
    let changed = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      changed++;
    });
    await client.connect(bridge(env.svc.port));
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(["svc_time", "svc_models", "tiny_echo"]));
      const r = await client.callTool({ name: "tiny_echo", arguments: { message: "through the bridge" } });
      expect(r.content).toEqual([{ type: "text", text: "echo: through the bridge" }]);
      await writeFile(listFile, JSON.stringify(["echo", "progress"]));
      await until(() => changed > 0, 20_000);
      expect((await client.listTools()).tools.map((t) => t.name)).toContain("tiny_progress");
    } finally {
      await client.close();
    }
  });

  it("sends SVC_MCP_ACCESS_KEY as the bearer: a key without tools:call is refused with a clear message", async () => {
    const k = await env.key({ permissions: { actions: ["chat:completions"] } });
    const r = await runCli(["mcp", "--port", String(env.svc.port)], { SVC_MCP_ACCESS_KEY: k.secret });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/may not call tools.*tools:call/);
    const good = await env.key({ permissions: { actions: ["tools:call"] } });
    const client = new Client({ name: "desktop", version: "1.0.0" });
    await client.connect(bridge(env.svc.port, { SVC_MCP_ACCESS_KEY: good.secret }));
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    await client.close();
  });

  it("with no svc running: a clear error on stderr and a non-zero exit", async () => {
    const r = await runCli(["mcp", "--port", String(DEAD_PORT)]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/svc is not running .*svc serve/);
    expect(r.stdout).toBe("");
  });
});
