// Throwaway PostgreSQL 15 and Redis 7 for the scale-out tests and bench, stopped at the end.
// PostgreSQL and Redis each listen only on a Unix socket in their temp dir (no port to race for;
// svc takes unix:// Redis URLs). Needs the Debian packages (postgresql-15, redis-server;
// `.ci/run` installs them). `available()` says why not when they are missing, so suites can skip
// with a clear message instead of failing on a machine without them.
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, chmodSync, readFileSync, rmSync } from "node:fs";
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

export interface Service {
  url: string;
  stop(): Promise<void>;
  /** the server's main process (PostgreSQL's postmaster, whose backends are its children) */
  pid(): number;
}

/** initdb refuses root: run the server as the `postgres` user (the package creates it). */
const asPg = (cmd: string, args: string[]) =>
  process.getuid?.() === 0 ? { cmd: "runuser", args: ["-u", "postgres", "--", cmd, ...args] } : { cmd, args };

function run(cmd: string, args: string[]) {
  const c = asPg(cmd, args);
  execFileSync(c.cmd, c.args, { stdio: ["ignore", "ignore", "pipe"] });
}

/** `extra`: more server settings (`-c name=value` each), e.g. the bench's pg_stat_statements. */
export async function startPostgres(extra: string[] = []): Promise<Service> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "svc-pg-"));
  chmodSync(dir, 0o777); // the postgres user writes here
  const data = path.join(dir, "data");
  run(path.join(PG_BIN, "initdb"), ["-D", data, "-A", "trust", "-U", "svc", "--no-sync", "-E", "UTF8"]);
  run(path.join(PG_BIN, "pg_ctl"), [
    "-D", data, "-l", path.join(dir, "log"), "-w", "-o",
    `-k ${dir} -c listen_addresses='' -c fsync=off -c synchronous_commit=off -c max_connections=200${extra.map((x) => ` -c ${x}`).join("")}`,
    "start",
  ]);
  return {
    // host= names the socket directory (node-postgres and libpq read it); no TCP at all
    url: `postgresql://svc@localhost/postgres?host=${encodeURIComponent(dir)}`,
    pid: () => Number(readFileSync(path.join(data, "postmaster.pid"), "utf8").split("\n", 1)[0]),
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
  /** stop the server (outage) and start it again on the same socket */
  kill(): Promise<void>;
  restart(): Promise<void>;
}

export async function startRedis(): Promise<RedisService> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "svc-redis-"));
  // a Unix socket in the test's own temp dir, never a TCP port: nothing else can take it
  const socket = path.join(dir, "redis.sock");
  const launch = async () => {
    const p = spawn("redis-server", ["--port", "0", "--unixsocket", socket, "--unixsocketperm", "700", "--save", "", "--appendonly", "no", "--dir", dir], { stdio: "ignore" });
    const ok = await redisUp(p, socket);
    return ok ? p : null;
  };
  const proc = await launch();
  if (!proc) throw new Error(`redis-server did not start on ${socket}`);
  const svc: RedisService = {
    url: `unix://${socket}`,
    proc,
    pid: () => svc.proc.pid!,
    async kill() {
      const p = svc.proc;
      if (p.exitCode !== null || p.signalCode !== null) return;
      const done = new Promise((r) => p.once("exit", r));
      p.kill("SIGKILL");
      await done;
    },
    async restart() {
      await svc.kill();
      const p = await launch(); // the same socket: the URL svc was given
      if (!p) throw new Error(`redis-server could not start again on ${socket}`);
      svc.proc = p;
    },
    async stop() {
      await svc.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return svc;
}

/** True once the server on the socket is `p` (its INFO names p's pid); false when p exited. */
async function redisUp(p: ChildProcess, socket: string, ms = 10_000): Promise<boolean> {
  const end = Date.now() + ms;
  for (;;) {
    if (p.exitCode !== null || p.signalCode !== null) return false;
    const pid = await new Promise<number>((resolve) => {
      let got = "";
      const s = net.connect(socket, () => s.write("INFO server\r\n"));
      s.on("data", (d) => {
        got += d.toString();
        const m = /process_id:(\d+)/.exec(got);
        if (m) (s.destroy(), resolve(Number(m[1])));
      });
      s.once("error", () => resolve(0));
      s.once("close", () => resolve(0));
    });
    if (pid === p.pid) return true;
    if (Date.now() > end) {
      p.kill("SIGKILL");
      throw new Error(`redis-server did not answer on ${socket}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
