// Throwaway PostgreSQL 15 and Redis 7 for the scale-out tests and bench: a temp dir, a free
// loopback port, stopped at the end. Needs the Debian packages (postgresql-15, redis-server;
// `.ci/run` installs them). `available()` says why not when they are missing, so suites can skip
// with a clear message instead of failing on a machine without them.
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, chmodSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

const PG_BIN = "/usr/lib/postgresql/15/bin";

export function missingServices(): string | null {
  const miss: string[] = [];
  if (!existsSync(path.join(PG_BIN, "initdb"))) miss.push("postgresql-15");
  if (!hasBinary("redis-server")) miss.push("redis-server");
  const why = miss.length ? `PostgreSQL 15 / Redis 7 not installed (missing: ${miss.join(", ")}); run \`sudo apt-get install -y postgresql-15 redis-server\` or .ci/run` : null;
  // CI (.ci/run) sets SVC_REQUIRE_SERVICES: there a missing package fails the suites instead of skipping them
  if (why && process.env.SVC_REQUIRE_SERVICES) throw new Error(why);
  return why;
}

function hasBinary(name: string): boolean {
  try {
    execFileSync("sh", ["-c", `command -v ${name}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** A loopback port nothing listens on (1, tcpmux), for "unreachable" cases: a port found free a
 * moment ago could be taken by another test's server meanwhile, turning "refused" into an answer. */
export const DEAD_PORT = 1;

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

export interface Service {
  url: string;
  stop(): Promise<void>;
}

/** initdb refuses root: run the server as the `postgres` user (the package creates it). */
const asPg = (cmd: string, args: string[]) =>
  process.getuid?.() === 0 ? { cmd: "runuser", args: ["-u", "postgres", "--", cmd, ...args] } : { cmd, args };

function run(cmd: string, args: string[]) {
  const c = asPg(cmd, args);
  execFileSync(c.cmd, c.args, { stdio: ["ignore", "ignore", "pipe"] });
}

export async function startPostgres(): Promise<Service> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "svc-pg-"));
  chmodSync(dir, 0o777); // the postgres user writes here
  const data = path.join(dir, "data");
  const port = await freePort();
  run(path.join(PG_BIN, "initdb"), ["-D", data, "-A", "trust", "-U", "svc", "--no-sync", "-E", "UTF8"]);
  run(path.join(PG_BIN, "pg_ctl"), [
    "-D", data, "-l", path.join(dir, "log"), "-w", "-o",
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=200`,
    "start",
  ]);
  return {
    url: `postgresql://svc@127.0.0.1:${port}/postgres`,
    async stop() {
      try {
        run(path.join(PG_BIN, "pg_ctl"), ["-D", data, "-m", "immediate", "-w", "stop"]);
      } catch {
        /* already gone */
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface RedisService extends Service {
  proc: ChildProcess;
  port: number;
  /** stop the server (outage) and start it again on the same port */
  kill(): Promise<void>;
  restart(): Promise<void>;
}

export async function startRedis(): Promise<RedisService> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "svc-redis-"));
  const port = await freePort();
  const launch = async () => {
    const p = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir], { stdio: "ignore" });
    await waitPort(port);
    return p;
  };
  const svc: RedisService = {
    url: `redis://127.0.0.1:${port}`,
    port,
    proc: await launch(),
    async kill() {
      const p = svc.proc;
      if (p.exitCode !== null || p.signalCode !== null) return;
      const done = new Promise((r) => p.once("exit", r));
      p.kill("SIGKILL");
      await done;
    },
    async restart() {
      await svc.kill();
      svc.proc = await launch();
    },
    async stop() {
      await svc.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return svc;
}

async function waitPort(port: number, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, "127.0.0.1", () => {
        s.end();
        resolve(true);
      });
      s.once("error", () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > end) throw new Error(`nothing listens on port ${port}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
