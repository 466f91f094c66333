// Child processes for the benchmarks: pinned to a core when taskset exists, and `svc serve`
// started on a temp home with its URL read from the server.json it writes.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const sleep = (n: number) => new Promise((r) => setTimeout(r, n));

const canPin = existsSync("/usr/bin/taskset") && os.cpus().length >= 2;

/** Pin this process (every thread, and the children it starts after) to `core`; false when
 * pinning is unavailable. `unpinSelf` gives it every core back. */
export function pinSelf(core: number): boolean {
  if (!canPin) return false;
  execFileSync("/usr/bin/taskset", ["-a", "-cp", String(core), String(process.pid)], { stdio: "ignore" });
  return true;
}

/** One process's /proc/<pid>/stat: its command name, parent, and CPU time used (user + system,
 * microseconds); undefined once it has exited (Linux only). */
export function procStat(pid: number): { comm: string; ppid: number; cpuMicros: number } | undefined {
  let st: string;
  try {
    st = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // the command sits in parentheses and may hold spaces or ")": the fields follow its last ")";
  // ppid is the 2nd of them, utime and stime the 12th and 13th
  const end = st.lastIndexOf(")");
  const f = st.slice(end + 2).split(" ");
  return { comm: st.slice(st.indexOf("(") + 1, end), ppid: Number(f[1]), cpuMicros: ((Number(f[11]) + Number(f[12])) * 1e6) / TICKS };
}
const TICKS = 100; // USER_HZ, 100 on Linux

/** Every process id on the machine now (/proc). */
export const allPids = (): number[] => readdirSync("/proc").filter((d) => /^\d+$/.test(d)).map(Number);

/** The processes whose parent is `pid` now (/proc, Linux). */
export function childrenOf(pid: number): number[] {
  return allPids().filter((p) => procStat(p)?.ppid === pid);
}

/** Pin the running process `pid` and the children it has now (and, by inheritance, those it
 * starts after: PostgreSQL's backends) to `core` (or a list, "0-1"); false when pinning is unavailable. */
export function pinTree(pid: number, core: number | string): boolean {
  if (!canPin) return false;
  for (const p of [pid, ...childrenOf(pid)]) execFileSync("/usr/bin/taskset", ["-a", "-cp", String(core), String(p)], { stdio: "ignore" });
  return true;
}

export function unpinSelf(): void {
  if (canPin) execFileSync("/usr/bin/taskset", ["-a", "-cp", `0-${os.cpus().length - 1}`, String(process.pid)], { stdio: "ignore" });
}

/** Start `cmd args` on `core` (or anywhere when core is undefined or pinning is unavailable). */
export function start(core: number | undefined, cmd: string, args: string[], env: Record<string, string> = {}, cwd = root): ChildProcess {
  const [c, a] = core !== undefined && canPin ? ["/usr/bin/taskset", ["-c", String(core), cmd, ...args]] : [cmd, args];
  return spawn(c, a, { cwd, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
}

/** The first line of `checkout`'s bin/svc.mjs (`#!/usr/bin/env -S [NAME=value …] node …`): the
 * environment and node flags the `svc` command and `npm start` run svc with, so a bench runs it so. */
function svcLaunch(checkout = root): { env: Record<string, string>; flags: string[] } {
  const first = readFileSync(path.join(checkout, "bin/svc.mjs"), "utf8").split("\n", 1)[0]!;
  const m = /^#!\S*env(?: -S)?((?: \w+=\S*)*) node\b(.*)$/.exec(first);
  const words = (x: string | undefined) => x?.trim().split(/\s+/).filter(Boolean) ?? [];
  return { env: Object.fromEntries(words(m?.[1]).map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)])), flags: words(m?.[2]) };
}

/** node's flags from `checkout`'s bin/svc.mjs first line. */
export const svcNodeFlags = (checkout = root): string[] => svcLaunch(checkout).flags;

/** The environment on `checkout`'s bin/svc.mjs first line (glibc's malloc settings). */
export const svcEnv = (checkout = root): Record<string, string> => svcLaunch(checkout).env;

/** `svc serve --port 0 --config <dir> --no-quickstart` on `home` (from `checkout`, another
 * working copy of svc, when given; `nodeArgs` go to node, e.g. --trace-gc-nvp, whose lines
 * `stdout` then receives); resolves with the process and its URL. */
export async function startSvcProcess(opts: { home: string; config: string; core?: number; env?: Record<string, string>; checkout?: string; nodeArgs?: string[]; stdout?: (chunk: Buffer) => void }): Promise<{ proc: ChildProcess; url: string }> {
  const proc = start(opts.core, process.execPath, [...svcNodeFlags(opts.checkout), ...(opts.nodeArgs ?? []), "bin/svc.mjs", "serve", "--port", "0", "--config", opts.config, "--no-quickstart"], {
    ...svcEnv(opts.checkout),
    SVC_HOME: opts.home,
    ...opts.env,
  }, opts.checkout);
  if (opts.stdout) proc.stdout?.on("data", opts.stdout);
  else proc.stdout?.resume();
  proc.stderr?.resume();
  const f = path.join(opts.home, "server.json");
  for (let i = 0; i < 600; i++) {
    const url = existsSync(f) ? readUrl(f) : undefined; // the file may be half-written
    if (url) return { proc, url };
    if (proc.exitCode !== null) break;
    await sleep(100);
  }
  proc.kill("SIGTERM");
  throw new Error("svc did not start");
}

function readUrl(file: string): string | undefined {
  try {
    return JSON.parse(readFileSync(file, "utf8")).url;
  } catch {
    return undefined;
  }
}

/** The first line a child prints on stdout (bench/upstream.ts prints its port). */
export function firstLine(p: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = "";
    p.stdout!.on("data", (d) => {
      buf += d;
      const i = buf.indexOf("\n");
      if (i >= 0) resolve(buf.slice(0, i).trim());
    });
    p.on("exit", (c) => reject(new Error(`process exited with ${c}`)));
  });
}

/** The stand-in upstream and the gateway bench's manifests in `<tmp>/config`, which svc serves. */
export async function startStandinGateway(tmp: string): Promise<{ proc: ChildProcess; url: string; cfg: string }> {
  const up = await startStandin();
  const cfg = path.join(tmp, "config");
  mkdirSync(cfg);
  writeGatewayConfig(cfg, up.url);
  return { ...up, cfg };
}

/** CPU time a process has used (user + system, microseconds; /proc, Linux only). Unlike
 * requests/s it barely moves when other work shares the machine, so CPU per request compares
 * gateways on a loaded machine too. */
export function cpuMicros(pid: number | undefined): number | undefined {
  return pid ? procStat(pid)?.cpuMicros : undefined;
}

/** The loopback stand-in upstream (bench/upstream.ts) on core 0; `url` is its OpenAI base URL. */
export async function startStandin(): Promise<{ proc: ChildProcess; url: string }> {
  const proc = start(0, process.execPath, ["--import", "tsx", "bench/upstream.ts"]);
  try {
    return { proc, url: `http://127.0.0.1:${Number(await firstLine(proc))}/v1` };
  } catch (e) {
    proc.kill();
    throw e;
  }
}

/** The Provider manifest svc's benches route `bench-model` through (credential BENCH_UPSTREAM_KEY). */
export function standinProvider(upstream: string): string {
  return `apiVersion: svc/v1
kind: Provider
metadata: {name: standin}
spec:
  type: openai
  baseUrl: ${upstream}
  credential: env:BENCH_UPSTREAM_KEY
  models:
    - {name: bench-model, inputPerMillion: 0.5, outputPerMillion: 1.5}
`;
}

/** The gateway bench's manifests in `dir`: the stand-in Provider and a policy with an Allow and a
 * Deny statement (the key made by gatewayKey carries it). */
export function writeGatewayConfig(dir: string, upstream: string): void {
  writeFileSync(path.join(dir, "gateway.yaml"), `${standinProvider(upstream)}---
apiVersion: svc/v1
kind: AccessPolicy
metadata: {name: bench-policy}
spec:
  version: "2024-01-01"
  statements:
    - {effect: Allow, actions: ["chat:completions", "chat:stream"], resources: ["model:bench-model", "model:bench-cached"]}
    - {effect: Deny, actions: ["*"], resources: ["provider:forbidden"]}
`);
}

/** The environment a gateway bench svc runs with (its admin key and the upstream's credential). */
export const GATEWAY_ADMIN = "sk-svc-benchadminkey0000000000000000000000000000";
export const gatewayEnv = { SVC_ADMIN_KEY: GATEWAY_ADMIN, BENCH_UPSTREAM_KEY: "sk-upstream-bench" };

/** Wait for svc at `url`, then make the gateway bench's key: a user key with the policy, rate,
 * budget and token limits and an IP allowlist, so every check runs on every request. */
export async function gatewayKey(url: string): Promise<string> {
  await waitHttp(`${url}/health`);
  const created = (await (await waitHttp(`${url}/v1/api-keys`, {
    method: "POST",
    headers: { authorization: `Bearer ${GATEWAY_ADMIN}`, "content-type": "application/json" },
    body: JSON.stringify({
      name: "bench", key_type: "user", organization_id: "org-bench", team_id: "team-bench", user_id: "u1",
      policies: ["bench-policy"],
      rate_limits: { per_minute: 100_000_000, burst: 100_000_000, per_hour: 1_000_000_000 },
      budget_limits: { daily: 1_000_000, monthly: 1_000_000 },
      token_limits: { per_request_max: 4096, daily: 1_000_000_000_000 },
      ip_allowlist: { enabled: true, addresses: ["127.0.0.0/8", "::1/128"] },
    }),
  })).json()) as { api_key?: string };
  if (!created.api_key) throw new Error(`key creation failed: ${JSON.stringify(created)}`);
  return created.api_key;
}

/** Poll `url` until it answers below 500. */
export async function waitHttp(url: string, init?: RequestInit, timeoutMs = 60_000): Promise<Response> {
  const t0 = Date.now();
  for (;;) {
    try {
      const r = await fetch(url, init);
      if (r.status < 500) return r;
    } catch {}
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${url}`);
    await sleep(200);
  }
}

/** One autocannon run (bench/load.ts, which also spreads connections over a list of URLs) as a
 * child process on core 0; its JSON result. */
export async function loadRun(spec: { url: string | string[]; headers: Record<string, string>; body: string; connections: number; seconds: number; rate?: number; samples?: boolean }): Promise<any> {
  const p = start(0, process.execPath, ["--import", "tsx", "bench/load.ts", JSON.stringify(spec)]);
  let out = "";
  let err = "";
  p.stdout!.on("data", (d) => (out += d));
  p.stderr!.on("data", (d) => (err += d));
  const code = await new Promise((r) => p.on("exit", r));
  if (code !== 0) throw new Error(`load run failed (${code}): ${err.slice(-500)}`);
  return JSON.parse(out);
}
