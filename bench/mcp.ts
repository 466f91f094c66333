// MCP benchmark: the cost svc adds to a tool call. The same stdio MCP server (server-everything,
// tool `echo`) is called directly with the SDK's Client, through svc's POST /mcp/call, and
// through svc's /mcp endpoint with the SDK's Client over Streamable HTTP. Calls are sequential
// (one in flight), in interleaved batches so drift on a shared machine hits all paths alike.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startSvc } from "../boot/start";
import { table, ms, percentile, type Section } from "./report";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const everything = path.join(root, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const quietLog = { info() {}, warn() {}, error() {} };

export async function mcpBench(opts: { calls?: number } = {}): Promise<Section> {
  const calls = opts.calls ?? Number(process.env.BENCH_MCP_CALLS ?? 1000);
  const home = mkdtempSync(path.join(os.tmpdir(), "svc-bench-mcp-"));
  const run = await startSvc({ home, host: "127.0.0.1", port: 0, quickstart: false, log: quietLog });
  const direct = new Client({ name: "bench", version: "1" });
  const viaMcp = new Client({ name: "bench", version: "1" });
  try {
    const doc = { apiVersion: "svc/v1", kind: "McpServer", metadata: { name: "everything" }, spec: { transport: "stdio", command: process.execPath, args: [everything, "stdio"] } };
    const res = await fetch(`${run.url}/admin/config/apply`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ documents: [doc], confirm: true, source: "bench" }) });
    if (res.status !== 200) throw new Error(`apply failed: ${res.status} ${await res.text()}`);
    const t0 = Date.now();
    while (!run.svc.engines.tools?.get("everything_echo")) {
      if (Date.now() - t0 > 30_000) throw new Error("everything did not connect in 30 s");
      await new Promise((r) => setTimeout(r, 20));
    }
    await direct.connect(new StdioClientTransport({ command: process.execPath, args: [everything, "stdio"], stderr: "ignore" }));
    await viaMcp.connect(new StreamableHTTPClientTransport(new URL(`${run.url}/mcp`)));

    const body = JSON.stringify({ name: "everything_echo", arguments: { message: "bench" } });
    const paths: Record<string, () => Promise<unknown>> = {
      "direct SDK Client (stdio)": () => direct.callTool({ name: "echo", arguments: { message: "bench" } }),
      "svc POST /mcp/call": async () => {
        const r = await fetch(`${run.url}/mcp/call`, { method: "POST", headers: { "content-type": "application/json" }, body });
        const j: any = await r.json();
        if (!j.ok) throw new Error(`call failed: ${JSON.stringify(j)}`);
      },
      "svc /mcp (SDK Client, Streamable HTTP)": () => viaMcp.callTool({ name: "everything_echo", arguments: { message: "bench" } }),
    };
    const lat: Record<string, number[]> = Object.fromEntries(Object.keys(paths).map((k) => [k, []]));
    for (const f of Object.values(paths)) for (let i = 0; i < 30; i++) await f(); // warm up
    // CPU time of this process (the client and svc; not the stdio servers) per call: it holds
    // better than latency on a loaded machine
    const cpu: Record<string, number> = {};
    const batch = 50;
    for (let done = 0; done < calls; done += batch) {
      for (const [k, f] of Object.entries(paths)) {
        const c0 = process.cpuUsage();
        for (let i = 0; i < batch; i++) {
          const t = performance.now();
          await f();
          lat[k].push(performance.now() - t);
        }
        const c = process.cpuUsage(c0);
        cpu[k] = (cpu[k] ?? 0) + c.user + c.system;
      }
    }
    const base = percentile(lat["direct SDK Client (stdio)"], 50);
    const baseP99 = percentile(lat["direct SDK Client (stdio)"], 99);
    const rows = Object.entries(lat).map(([k, xs]) => {
      const p50 = percentile(xs, 50);
      const p99 = percentile(xs, 99);
      return [k, xs.length, ms(p50), ms(p99), `${(p50 / base).toFixed(2)}x`, `${(p99 / baseP99).toFixed(2)}x`, ms(p50 - base), (cpu[k] / xs.length).toFixed(0)];
    });
    const data = Object.fromEntries(Object.entries(lat).map(([k, xs]) => [k, { n: xs.length, p50: percentile(xs, 50), p99: percentile(xs, 99), cpuMicrosPerCall: cpu[k] / xs.length }]));
    return {
      title: "MCP tool calls",
      body:
        table(["path", "calls", "p50", "p99", "p50 ratio", "p99 ratio", "added at p50", "CPU µs per call (client + svc)"], rows) +
        "\n\nOne call in flight at a time; `echo` of server-everything over stdio; ratios against the direct SDK call to the same server program. " +
        "svc adds an HTTP round trip (the client's fetch included: both run in this process), authentication, exposure check and argument validation before its own stdio call. " +
        "`POST /mcp/call` is served by the lean listener (no Koa); `/mcp` by the MCP SDK's Streamable HTTP server transport.",
      data,
    };
  } finally {
    await direct.close().catch(() => undefined);
    await viaMcp.close().catch(() => undefined);
    await run.stop();
    rmSync(home, { recursive: true, force: true });
  }
}
