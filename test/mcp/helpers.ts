// Shared pieces of the MCP tests: real servers' entry points, manifests, apply and status waits.
import path from "node:path";
import { spawn, type ChildProcess } from "node:child_process";
import { repoRoot } from "../helpers/cli";
import { postJson, until } from "../helpers/http";
import type { TestSvc } from "../helpers/svc";

export const everything = path.join(repoRoot, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
export const filesystem = path.join(repoRoot, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
export const tiny = path.join(repoRoot, "test/mcp/fixtures/tiny-server.mjs");
/** A stdio server that misbehaves on demand (exits mid-call, huge answers; see the file). */
export const rough = path.join(repoRoot, "test/mcp/fixtures/rough-server.mjs");
/** `node --import` this to make a server print the port it bound (see the file). */
export const reportPort = path.join(repoRoot, "test/mcp/fixtures/report-port.mjs");
export const node = process.execPath;

/** Is a process (a stdio service, or one it started) still running? */
export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

export function mcpDoc(name: string, spec: Record<string, unknown>) {
  return { apiVersion: "svc/v1", kind: "McpServer", metadata: { name }, spec };
}

export async function apply(s: TestSvc, documents: unknown[], opts: { confirm?: boolean; prune?: boolean; source?: string } = {}) {
  return postJson(`${s.url}/admin/config/apply`, { documents, confirm: opts.confirm ?? true, prune: opts.prune ?? false, source: opts.source ?? "mcp-test" });
}

export function ready(s: TestSvc, name: string) {
  return s.svc.store.get("McpServer", name)?.status?.conditions?.find((c) => c.type === "Ready");
}

/** Wait until the Ready condition of McpServer/name has `reason` (and return it). */
export async function waitReason(s: TestSvc, name: string, reason: string | RegExp, timeoutMs = 30_000) {
  const ok = () => {
    const r = ready(s, name)?.reason;
    return r !== undefined && (typeof reason === "string" ? r === reason : reason.test(r));
  };
  try {
    await until(ok, timeoutMs, 25);
  } catch {
    throw new Error(`McpServer/${name}: wanted reason ${reason}, have ${JSON.stringify(ready(s, name))}`);
  }
  return ready(s, name)!;
}

export async function tools(s: TestSvc, headers: Record<string, string> = {}): Promise<Array<{ name: string; description: string; inputSchema: any }>> {
  const res = await fetch(`${s.url}/mcp/tools`, { headers });
  const j: any = await res.json();
  if (res.status !== 200) throw new Error(`GET /mcp/tools: ${res.status} ${JSON.stringify(j)}`);
  return j.tools;
}

export function call(s: TestSvc, name: string, args: unknown = {}, headers: Record<string, string> = {}) {
  return postJson(`${s.url}/mcp/call`, { name, arguments: args }, headers);
}

/** Start a child that prints "PORT <n>" (or a server-everything style log line) and return the port. */
export function startChild(args: string[], env: Record<string, string> = {}, portLine = /PORT (\d+)|port (\d+)/): Promise<{ child: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(node, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = portLine.exec(out);
      if (m) resolve({ child, port: Number(m[1] ?? m[2]) });
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.on("error", reject);
    child.on("exit", (code) => reject(new Error(`child exited (${code}) before listening: ${out.slice(-500)}`)));
  });
}

