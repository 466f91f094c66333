// One MCP path at a time against `svc serve` (pinned to core 1, this process on core 0), for
// profiles and svc's CPU per call of that path alone:
// `PATHS=mcpcall,mcp N=3000 SVC_ARGS="--cpu-prof --cpu-prof-interval 100 --cpu-prof-dir=/tmp/p" node --import tsx bench/dev/mcp-path-profile.ts`
// BASE=<another built checkout>: a second svc from there, both served in alternating batches of
// 100 calls (paired, so machine load falls on both alike); prints both CPU figures and the ratio.
import { spawn } from "node:child_process";
import { appendFileSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Pool } from "undici";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { cpuMicros, pinSelf, root, sleep, startSvcProcess } from "../processes";
import { percentile } from "../report";

const everything = path.join(root, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const body = JSON.stringify({ name: "everything_echo", arguments: { message: "bench" } });
pinSelf(0);

async function target(checkout?: string) {
  const tmp = mkdtempSync(path.join(os.tmpdir(), "svc-mcpp-"));
  const cfg = path.join(tmp, "config");
  mkdirSync(cfg);
  writeFileSync(path.join(cfg, "mcp.yaml"), `apiVersion: svc/v1\nkind: McpServer\nmetadata: {name: everything}\nspec:\n  transport: stdio\n  command: ${JSON.stringify(process.execPath)}\n  args: [${JSON.stringify(everything)}, stdio]\n`);
  const out = process.env.SVC_STDOUT;
  const svc = await startSvcProcess({ home: path.join(tmp, "home"), config: cfg, core: 1, checkout, nodeArgs: process.env.SVC_ARGS?.split(" ").filter(Boolean), stdout: out ? (c) => appendFileSync(out, c) : undefined });
  const pool = new Pool(svc.url, { connections: 1, pipelining: 1 });
  const call = async () => {
    const r = await pool.request({ method: "POST", path: "/mcp/call", headers: { "content-type": "application/json" }, body });
    const t = await r.body.text();
    if (r.statusCode !== 200) throw new Error(`${r.statusCode} ${t}`);
  };
  for (let t0 = Date.now(); ; await sleep(50)) {
    if (await call().then(() => true, () => false)) break;
    if (Date.now() - t0 > 30_000) throw new Error("no connection to everything");
  }
  const viaMcp = new Client({ name: "p", version: "1" });
  // NOSIGNAL=1: the SDK client's fetches without its transport-wide AbortSignal (undici adds a listener to it per fetch)
  const fetchOpt = process.env.NOSIGNAL ? { fetch: (u: string | URL, init?: RequestInit) => fetch(u, { ...init, signal: undefined }) } : {};
  const transport = new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp`), fetchOpt);
  await viaMcp.connect(transport);
  // mcpraw: the same /mcp session's tools/call from the undici Pool (no SDK client, no fetch): what svc adds on /mcp alone
  let id = 0;
  const headers = { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": transport.sessionId!, "mcp-protocol-version": transport.protocolVersion ?? "2025-06-18" };
  const raw = async () => {
    const r = await pool.request({ method: "POST", path: "/mcp", headers, body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method: "tools/call", params: { name: "everything_echo", arguments: { message: "bench" } } }) });
    const t = await r.body.text();
    if (r.statusCode !== 200 || !t.includes('"result"')) throw new Error(`${r.statusCode} ${t}`);
  };
  const paths: Record<string, () => Promise<unknown>> = { mcpcall: call, mcp: () => viaMcp.callTool({ name: "everything_echo", arguments: { message: "bench" } }), mcpraw: raw };
  const close = async () => {
    await viaMcp.close();
    await pool.close();
    svc.proc.kill("SIGINT");
    await new Promise((r) => svc.proc.once("exit", r));
  };
  return { svc, paths, close };
}

const targets = [await target()];
if (process.env.BASE) targets.push(await target(process.env.BASE));
const N = Number(process.env.N ?? 2000);
const batch = targets.length > 1 ? 100 : N;
for (const k of (process.env.PATHS ?? "mcpcall,mcp").split(",")) {
  const warm = Number(process.env.WARM ?? 50);
  for (const t of targets) for (let i = 0; i < warm; i++) await t.paths[k]();
  if (process.env.SVC_STDOUT) appendFileSync(process.env.SVC_STDOUT, `\n=== ${k} measured\n`);
  // PERF_OUT=/tmp/x.data (with SVC_ARGS=--perf-basic-prof): perf samples svc's CPU only, where a
  // --cpu-prof sample also lands on a syscall while the process waits for the core
  const pid = targets[0].svc.proc.pid!;
  const perf = process.env.PERF_OUT ? spawn("perf", ["record", "-e", "cpu-clock:u", "-F", "4000", "-g", "-p", String(pid), "-o", `${process.env.PERF_OUT}.${k}`], { stdio: "ignore" }) : undefined;
  if (perf) await sleep(500);
  const lat = targets.map(() => [] as number[]);
  const cpu = targets.map(() => 0);
  for (let done = 0; done < N; done += batch) {
    for (const [j, t] of targets.entries()) {
      const c0 = cpuMicros(t.svc.proc.pid)!;
      for (let i = 0; i < batch; i++) {
        const s = performance.now();
        await t.paths[k]();
        lat[j].push(performance.now() - s);
      }
      cpu[j] += cpuMicros(t.svc.proc.pid)! - c0;
    }
  }
  if (perf) {
    perf.kill("SIGINT");
    await new Promise((r) => perf.once("exit", r));
  }
  const per = cpu.map((c, j) => c / lat[j].length);
  console.log(k.padEnd(8), targets.map((_, j) => `${j ? "base" : "this"}: p50 ${percentile(lat[j], 50).toFixed(3)} ms, svc cpu µs/call ${per[j].toFixed(0)}`).join("; "), targets.length > 1 ? `; this/base cpu ${(per[0] / per[1]).toFixed(3)}` : "");
}
for (const t of targets) await t.close();
