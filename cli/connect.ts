// Finding the svc to talk to: the running server's admin API over loopback when one answers,
// else the store itself (offline: the SQLite file, or SVC_DATABASE_URL's PostgreSQL, cli/offline.ts).
// Port: --port, SVC_PORT, <home>/server.json, else 1337.
import { readFile } from "node:fs/promises";
import { DEFAULT_PORT, resolveHome, serverInfoFile, type ServerInfo } from "../engines/paths";
import { CliError } from "./errors";
import { request, type HttpAnswer } from "./http";
import { offlineStoreExists, offlineStoreLabel } from "./offline";

export interface TargetOptions {
  port?: string;
  home?: string;
}

export interface Target {
  home: string;
  port: number;
  portFrom: "--port" | "SVC_PORT" | "server.json" | "default";
  /** base URL the CLI uses (always loopback: admin routes refuse anything else) */
  base: string;
  info: ServerInfo | null;
}

export function parsePort(v: string, from: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v.trim()) || n < 0 || n > 65535) throw new CliError(`${from}: "${v}" is not a port number (0-65535)`);
  return n;
}

export async function resolveTarget(opts: TargetOptions): Promise<Target> {
  const home = resolveHome(opts.home);
  const info = await readServerInfo(home);
  let port: number;
  let portFrom: Target["portFrom"];
  if (opts.port !== undefined) {
    port = parsePort(opts.port, "--port");
    portFrom = "--port";
  } else if (process.env.SVC_PORT) {
    port = parsePort(process.env.SVC_PORT, "SVC_PORT");
    portFrom = "SVC_PORT";
  } else if (info) {
    port = info.port;
    portFrom = "server.json";
  } else {
    port = DEFAULT_PORT;
    portFrom = "default";
  }
  return { home, port, portFrom, base: `http://127.0.0.1:${port}`, info };
}

export async function readServerInfo(home: string): Promise<ServerInfo | null> {
  try {
    const j = JSON.parse(await readFile(serverInfoFile(home), "utf8"));
    return typeof j?.port === "number" ? (j as ServerInfo) : null;
  } catch {
    return null;
  }
}

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e: any) {
    return e?.code === "EPERM";
  }
}

/** Does an svc answer at base? (GET /health answering {status: "ok"}) */
export async function probe(base: string, timeoutMs = 1500): Promise<{ ok: boolean; revision?: number; error?: string }> {
  try {
    const res = await request(`${base}/health`, { timeoutMs });
    let j: any = null;
    try {
      j = JSON.parse(res.text);
    } catch {
      /* not JSON: not svc */
    }
    if (res.status >= 200 && res.status < 300 && j?.status === "ok") return { ok: true, revision: j.revision };
    return { ok: false, error: `${base}/health answered ${res.status} (not svc?)` };
  } catch (e: any) {
    return { ok: false, error: e?.code ?? e?.name ?? String(e) };
  }
}

export interface AdminResponse {
  status: number;
  json: any;
  text: string;
}

export async function admin(base: string, method: "GET" | "POST", path: string, body?: unknown): Promise<AdminResponse> {
  let res: HttpAnswer;
  try {
    res = await request(base + path, { method, headers: body !== undefined ? { "content-type": "application/json" } : {}, body: body !== undefined ? JSON.stringify(body) : undefined });
  } catch (e: any) {
    throw new CliError(`cannot reach svc at ${base}: ${e?.code ?? e?.message ?? e}`);
  }
  const text = res.text;
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text };
}

/** The server's error message, or a generic one. */
export function errorOf(r: AdminResponse): string {
  return r.json?.error?.message ?? `svc answered HTTP ${r.status}: ${r.text.slice(0, 300)}`;
}

/**
 * Online when a server answers; otherwise offline (the caller works on the store file).
 * `note` tells the user which one and why.
 */
export async function connect(opts: TargetOptions): Promise<{ target: Target; online: boolean; note: string }> {
  const target = await resolveTarget(opts);
  const p = await probe(target.base);
  if (p.ok) return { target, online: true, note: `svc at ${target.base}` };
  const running = target.info && pidAlive(target.info.pid) && target.portFrom === "server.json";
  const why = running
    ? `a server (pid ${target.info!.pid}) is recorded in ${serverInfoFile(target.home)} but does not answer at ${target.base}`
    : `no server answers at ${target.base}`;
  return { target, online: false, note: `offline: ${why}; working on ${await offlineStoreLabel(target.home)}` };
}

/** Is there a store to work on offline? (PostgreSQL: it answers; unreachable is a CliError) */
export function storeExists(home: string): Promise<boolean> {
  return offlineStoreExists(home);
}
