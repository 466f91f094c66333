// MCP benchmark: the cost svc adds to a tool call. The same stdio MCP server (server-everything,
// tool `echo`) is called directly with the SDK's Client, through svc's POST /mcp/call, and
// through svc's /mcp endpoint with the SDK's Client over Streamable HTTP. Calls are sequential
// (one in flight), in interleaved batches so drift on a shared machine hits all paths alike.
// svc runs in its own process pinned to core 1 (as the gateway bench pins it); this process (the
// clients and the direct baseline's stdio server) is pinned to core 0, so no client shares svc's core.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Pool } from "undici";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { cpuMicros, firstLine, pinSelf, root, sleep, start, startSvcProcess, unpinSelf } from "./processes";
import { table, ms, percentile, type Section } from "./report";

const everything = path.join(root, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");

export async function mcpBench(opts: { calls?: number } = {}): Promise<Section> {
  const calls = opts.calls ?? Number(process.env.BENCH_MCP_CALLS ?? 1000);
  const tmp = mkdtempSync(path.join(os.tmpdir(), "svc-bench-mcp-"));
  const cfg = path.join(tmp, "config");
  mkdirSync(cfg);
  writeFileSync(path.join(cfg, "mcp.yaml"), `apiVersion: svc/v1\nkind: McpServer\nmetadata: {name: everything}\nspec:\n  transport: stdio\n  command: ${JSON.stringify(process.execPath)}\n  args: [${JSON.stringify(everything)}, stdio]\n`);
  // the clients on core 0 (the inference section after this one in a run gets every core back)
  const pinned = pinSelf(0);
  // BENCH_MCP_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/p": profile svc's process under this load
  const nodeArgs = process.env.BENCH_MCP_NODE_ARGS?.split(" ").filter(Boolean);
  const svcProc = await startSvcProcess({ home: path.join(tmp, "home"), config: cfg, core: 1, nodeArgs });
  const url = svcProc.url;
  const pool = new Pool(url, { connections: 1, pipelining: 1 });
  const direct = new Client({ name: "bench", version: "1" });
  const viaMcp = new Client({ name: "bench", version: "1" });
  // the limit for /mcp: the same SDK client to a bare node:http bridge (bench/bare-mcp-bridge.ts)
  // on svc's core, which hands tools/call to the SDK's stdio client with no checks
  const bridgeProc = start(1, process.execPath, ["--import", "tsx", path.join(root, "bench/bare-mcp-bridge.ts"), everything, "stdio"]);
  const viaBridge = new Client({ name: "bench", version: "1" });
  try {
    const body = JSON.stringify({ name: "everything_echo", arguments: { message: "bench" } });
    // the lean client for /mcp/call: one keep-alive connection, the body read as text
    const call = async (): Promise<string> => {
      const r = await pool.request({ method: "POST", path: "/mcp/call", headers: { "content-type": "application/json" }, body });
      const text = await r.body.text();
      if (r.statusCode !== 200) throw new Error(`call failed: ${r.statusCode} ${text}`);
      return text;
    };
    const t0 = Date.now();
    for (;;) {
      const ok = await call().then((t) => JSON.parse(t).ok === true, () => false);
      if (ok) break;
      if (Date.now() - t0 > 30_000) throw new Error("everything did not connect in 30 s");
      await sleep(50);
    }
    await direct.connect(new StdioClientTransport({ command: process.execPath, args: [everything, "stdio"], stderr: "ignore" }));
    const viaMcpTransport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`));
    await viaMcp.connect(viaMcpTransport);
    await viaBridge.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${Number(await firstLine(bridgeProc))}/mcp`)));
    // the same session's tools/call from the lean client: svc's own cost on /mcp, without the SDK
    // client's fetch-based transport in this process
    let rawId = 0;
    const rawHeaders = { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": viaMcpTransport.sessionId!, "mcp-protocol-version": viaMcpTransport.protocolVersion ?? "2025-06-18" };
    const rawCall = async () => {
      const r = await pool.request({ method: "POST", path: "/mcp", headers: rawHeaders, body: JSON.stringify({ jsonrpc: "2.0", id: ++rawId, method: "tools/call", params: { name: "everything_echo", arguments: { message: "bench" } } }) });
      const text = await r.body.text();
      if (r.statusCode !== 200 || !text.includes('"result"')) throw new Error(`/mcp call failed: ${r.statusCode} ${text}`);
    };

    const paths: Record<string, () => Promise<unknown>> = {
      "direct SDK Client (stdio)": () => direct.callTool({ name: "echo", arguments: { message: "bench" } }),
      "svc POST /mcp/call (undici Pool)": async () => {
        if (!(await call()).startsWith('{"ok":true')) throw new Error("call failed");
      },
      "svc /mcp (SDK Client, Streamable HTTP)": () => viaMcp.callTool({ name: "everything_echo", arguments: { message: "bench" } }),
      "svc /mcp, same session (undici Pool)": rawCall,
      "bare bridge /mcp (SDK Client, Streamable HTTP)": () => viaBridge.callTool({ name: "echo", arguments: { message: "bench" } }),
    };
    const lat: Record<string, number[]> = Object.fromEntries(Object.keys(paths).map((k) => [k, []]));
    // Warm up to the steady state of a running server: svc runs with --no-concurrent-recompilation
    // (bin/svc.mjs), so V8 optimizes on svc's main thread, and after 30 calls those compiles were
    // about half of svc's CPU and latency per call; about 1000 calls a path settle them.
    const warmup = Number(process.env.BENCH_MCP_WARMUP ?? 1000);
    for (let i = 0; i < warmup; i++) for (const f of Object.values(paths)) await f();
    // CPU time of svc's process per call (not the stdio servers): it holds better than latency
    // on a loaded machine
    const cpu: Record<string, number> = {};
    // the bridge row counts the bridge's own process: the server's CPU a call beside svc's
    const pidOf = (k: string) => (k.startsWith("bare bridge") ? bridgeProc.pid : svcProc.proc.pid);
    const batch = 50;
    for (let done = 0; done < calls; done += batch) {
      for (const [k, f] of Object.entries(paths)) {
        const pid = pidOf(k);
        const c0 = cpuMicros(pid) ?? 0;
        for (let i = 0; i < batch; i++) {
          const t = performance.now();
          await f();
          lat[k].push(performance.now() - t);
        }
        cpu[k] = (cpu[k] ?? 0) + (cpuMicros(pid) ?? 0) - c0;
      }
    }
    const base = percentile(lat["direct SDK Client (stdio)"], 50);
    const baseP99 = percentile(lat["direct SDK Client (stdio)"], 99);
    const bridgeP50 = percentile(lat["bare bridge /mcp (SDK Client, Streamable HTTP)"], 50);
    const rows = Object.entries(lat).map(([k, xs]) => {
      const p50 = percentile(xs, 50);
      const p99 = percentile(xs, 99);
      return [k, xs.length, ms(p50), ms(p99), `${(p50 / base).toFixed(2)}x`, `${(p99 / baseP99).toFixed(2)}x`, ms(p50 - base), (cpu[k] / xs.length).toFixed(0)];
    });
    const data = {
      ...Object.fromEntries(Object.entries(lat).map(([k, xs]) => [k, { n: xs.length, p50: percentile(xs, 50), p99: percentile(xs, 99), addedP50: percentile(xs, 50) - base, serverCpuMicrosPerCall: cpu[k] / xs.length }])),
      sdkOverBareBridgeP50: percentile(lat["svc /mcp (SDK Client, Streamable HTTP)"], 50) - bridgeP50,
    };
    return {
      title: "MCP tool calls",
      body:
        table(["path", "calls", "p50", "p99", "p50 ratio", "p99 ratio", "added at p50", "server CPU µs per call"], rows) +
        `\n\nOne call in flight at a time, after ${warmup} warm-up calls of each path (the steady state of a running server: V8 has optimized the hot code), the paths taking turns in batches of 50; ` +
        "`echo` of server-everything over stdio; ratios against the direct SDK call to the same server program. " +
        (pinned ? "svc runs as its own process (`svc serve`) pinned to core 1; the bench process (the clients, and the direct baseline's stdio server) is pinned to core 0. " : "Pinning unavailable (no taskset or one core): svc and the clients share cores. ") +
        "The `/mcp/call` client is an undici Pool with one keep-alive connection (autocannon-style, no fetch/WHATWG layer); `/mcp` keeps the official SDK client (StreamableHTTPClientTransport), and the same session's `tools/call` is also sent from the undici Pool, which separates svc's own cost on `/mcp` from the SDK client's fetch-based transport in the bench process; the direct baseline is the SDK's stdio client. " +
        "svc adds an HTTP round trip, authentication, exposure check and argument validation before its own stdio call. " +
        `The bare bridge (\`bench/bare-mcp-bridge.ts\`, on svc's core) is the limit for \`/mcp\` as the bare gateway is for the gateway: node:http handing \`tools/call\` to the SDK's stdio client, no checks, answered as JSON; the same SDK client calls it. svc's \`/mcp\` through the SDK client minus the bare bridge's: **${ms(percentile(lat["svc /mcp (SDK Client, Streamable HTTP)"], 50) - bridgeP50)}** at p50. The "server CPU" column is the CPU time of the process that serves the path, per call: svc's, and the bridge's own on its row (neither counts the stdio server's). ` +
        "`POST /mcp/call` and a session's `POST /mcp` are served by the lean listener (no Koa); a plain `tools/call` on `/mcp` (no progress token, as here) is answered as `application/json` without the SDK's server transport, which still serves calls with a progress token (over SSE), lists and sessions.",
      data,
    };
  } finally {
    await direct.close().catch(() => undefined);
    await viaMcp.close().catch(() => undefined);
    await viaBridge.close().catch(() => undefined);
    bridgeProc.kill("SIGTERM");
    await pool.close().catch(() => undefined);
    svcProc.proc.kill("SIGTERM");
    await new Promise((r) => (svcProc.proc.exitCode !== null ? r(undefined) : svcProc.proc.once("exit", r)));
    rmSync(tmp, { recursive: true, force: true });
    if (pinned) unpinSelf();
  }
}
