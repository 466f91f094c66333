// Where the time of an exposed tool call goes: the direct SDK call, svc's engine call (no HTTP), a
// GET, POST /mcp/call on the lean listener and through Koa (a console cookie sends it there), /mcp;
// latency and this process's CPU per call. `ONLY=direct,mcpcall node --import tsx bench/dev/mcp-layers.ts`
import { mkdtempSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startSvc } from "../../boot/start";
import { percentile } from "../report";
const everything = path.resolve("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const quietLog = { info() {}, warn() {}, error() {} };
const home = mkdtempSync(path.join(os.tmpdir(), "svc-mcpl-"));
const run = await startSvc({ home, host: "127.0.0.1", port: 0, quickstart: false, log: quietLog });
const doc = { apiVersion: "svc/v1", kind: "McpServer", metadata: { name: "everything" }, spec: { transport: "stdio", command: process.execPath, args: [everything, "stdio"] } };
await fetch(`${run.url}/admin/config/apply`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ documents: [doc], confirm: true, source: "bench" }) });
while (!run.svc.engines.tools?.get("everything_echo")) await new Promise((r) => setTimeout(r, 20));
const direct = new Client({ name: "b", version: "1" });
await direct.connect(new StdioClientTransport({ command: process.execPath, args: [everything, "stdio"], stderr: "ignore" }));
const viaMcp = new Client({ name: "b", version: "1" });
await viaMcp.connect(new StreamableHTTPClientTransport(new URL(`${run.url}/mcp`)));
// the floor: node:http reading the body and answering JSON, same client
const bare = http.createServer((req, res) => { const parts: Buffer[] = []; req.on("data", (c) => parts.push(c)); req.on("end", () => { JSON.parse(Buffer.concat(parts).toString()); res.setHeader("content-type", "application/json"); res.end('{"ok":true}'); }); });
await new Promise<void>((r) => bare.listen(0, "127.0.0.1", r));
const bareUrl = `http://127.0.0.1:${(bare.address() as any).port}/`;
const body = JSON.stringify({ name: "everything_echo", arguments: { message: "bench" } });
const ac = new AbortController();
const paths: Record<string, () => Promise<unknown>> = {
  direct: () => direct.callTool({ name: "echo", arguments: { message: "bench" } }),
  directOpts: () => direct.callTool({ name: "echo", arguments: { message: "bench" } }, undefined, { timeout: 45000, resetTimeoutOnProgress: true, onprogress: () => {}, signal: ac.signal }),
  engine: () => run.svc.engines.tools!.call("everything_echo", { message: "bench" }, {}),
  bare: () => fetch(bareUrl, { method: "POST", headers: { "content-type": "application/json" }, body }).then((r) => r.text()),
  health: () => fetch(`${run.url}/mcp/health`).then((r) => r.text()),
  mcpcall: () => fetch(`${run.url}/mcp/call`, { method: "POST", headers: { "content-type": "application/json" }, body }).then((r) => r.text()),
  mcpcallKoa: () => fetch(`${run.url}/mcp/call`, { method: "POST", headers: { "content-type": "application/json", cookie: "svc_console=none" }, body }).then((r) => r.text()),
  mcp: () => viaMcp.callTool({ name: "everything_echo", arguments: { message: "bench" } }),
};
const reg: any = run.svc.engines.tools!; const orig = reg.call.bind(reg); let tIn = 0, tOut = 0;
reg.call = async (...a: any[]) => { tIn = performance.now(); try { return await orig(...a); } finally { tOut = performance.now(); } };
const ph: number[][] = [[], [], []];
const phased = async () => { const t = performance.now(); await paths.mcpcall(); const e = performance.now(); ph[0].push(tIn - t); ph[1].push(tOut - tIn); ph[2].push(e - tOut); };
paths.phased = phased;
const only = process.env.ONLY?.split(",");
const lat: Record<string, number[]> = {};
for (const [k, f] of Object.entries(paths)) { if (only && !only.includes(k)) continue; lat[k] = []; for (let i = 0; i < 30; i++) await f(); }
const N = Number(process.env.N ?? 400);
const cpu: Record<string, number> = {};
for (let d = 0; d < N; d += 50) for (const k of Object.keys(lat)) { const c0 = process.cpuUsage(); for (let i = 0; i < 50; i++) { const t = performance.now(); await paths[k](); lat[k].push(performance.now() - t); } const c = process.cpuUsage(c0); cpu[k] = (cpu[k] ?? 0) + c.user + c.system; }
// CPU of this process (the client and svc) per call: holds better than latency on a loaded machine
for (const [k, xs] of Object.entries(lat)) console.log(k.padEnd(12), "p50", percentile(xs, 50).toFixed(3), "p90", percentile(xs, 90).toFixed(3), "cpu µs/call", (cpu[k] / xs.length).toFixed(0));
console.log("phases", ph.map((x) => percentile(x, 50).toFixed(3)).join(" "));
bare.close(); await direct.close(); await viaMcp.close(); await run.stop(); process.exit(0);
