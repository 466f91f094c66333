// "Another machine" for the non-loopback tests: a network namespace the test makes, joined to
// this one by a veth pair on a /30 of NETNS_RANGE (198.51.100.0/24, TEST-NET-2). svc binds the
// host end; the test's requests to that address leave from inside the namespace (through
// netns-forwarder.mjs, reached over a Unix socket), so svc sees a caller that is not loopback
// and no packet goes anywhere but between the two ends of the pair.
//
// Needs root and iproute2. In CI (CI or SVC_REQUIRE_NETNS set; .ci/run sets the latter) a
// namespace that cannot be made fails the suite; elsewhere the suite is skipped with the reason.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { Agent, buildConnector, getGlobalDispatcher, setGlobalDispatcher, type Dispatcher } from "undici";
import { tempDir } from "./svc";

export interface Netns {
  /** the host end of the pair: bind svc here */
  hostAddr: string;
  /** the namespace end: svc sees requests from this address */
  nsAddr: string;
  /** routes requests to hostAddr through the namespace; anything else as usual */
  dispatcher: Dispatcher;
  /** tear down: restore the global dispatcher, stop the forwarder, delete the pair and namespace */
  close(): Promise<void>;
}

export type NetnsResult = { ns: Netns; skip: null } | { ns: null; skip: string };

const required = () => !!(process.env.CI || process.env.SVC_REQUIRE_NETNS);
const ip = (...args: string[]) => execFileSync("ip", args, { stdio: ["ignore", "ignore", "pipe"] });
const nsName = (k: number) => `svct${k}`;
const owner = (k: number) => path.join(os.tmpdir(), `svc-test-netns-${k}.pid`);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function teardown(k: number): void {
  for (const args of [["link", "del", `svch${k}`], ["netns", "del", nsName(k)]]) {
    try {
      ip(...args);
    } catch {
      /* already gone */
    }
  }
  rmSync(owner(k), { force: true });
}

/** Claim a free slot: `ip netns add` is atomic, so two test processes never share one. Slots of
 * dead processes (a crashed run) are reclaimed. */
function claim(): number {
  const start = (process.pid * 7) % 63;
  for (let i = 0; i < 63; i++) {
    const k = ((start + i) % 63) + 1;
    try {
      ip("netns", "add", nsName(k));
      writeFileSync(owner(k), String(process.pid));
      return k;
    } catch (e) {
      const pid = existsSync(owner(k)) ? Number(readFileSync(owner(k), "utf8")) : NaN;
      if (!Number.isNaN(pid) && !alive(pid)) {
        teardown(k);
        i--;
        continue;
      }
      if (i === 62) throw e;
    }
  }
  throw new Error("no free namespace slot");
}

/** Make the namespace and install its dispatcher as the global one (fetch, the SDKs). */
export async function openNetns(): Promise<NetnsResult> {
  try {
    return { ns: await make(), skip: null };
  } catch (e: any) {
    const why = `cannot make a network namespace (needs root and iproute2): ${String(e?.stderr ?? e?.message ?? e).trim()}`;
    if (required()) throw new Error(`${why}; CI requires the non-loopback tests to run`);
    console.log(`skipping: ${why}`);
    return { ns: null, skip: why };
  }
}

async function make(): Promise<Netns> {
  const k = claim();
  let fwd: ChildProcess | undefined;
  try {
    const ns = nsName(k);
    const hostAddr = `198.51.100.${4 * k + 1}`;
    const nsAddr = `198.51.100.${4 * k + 2}`;
    ip("link", "add", `svch${k}`, "type", "veth", "peer", "name", `svcn${k}`);
    ip("link", "set", `svcn${k}`, "netns", ns);
    ip("addr", "add", `${hostAddr}/30`, "dev", `svch${k}`);
    ip("link", "set", `svch${k}`, "up");
    ip("-n", ns, "addr", "add", `${nsAddr}/30`, "dev", `svcn${k}`);
    ip("-n", ns, "link", "set", `svcn${k}`, "up");
    ip("-n", ns, "link", "set", "lo", "up");

    const dir = await tempDir("svc-netns-");
    const socketPath = path.join(dir, "fwd.sock");
    fwd = spawn("ip", ["netns", "exec", ns, process.execPath, path.join(__dirname, "netns-forwarder.mjs"), socketPath], { stdio: ["pipe", "pipe", "inherit"] });
    await new Promise<void>((resolve, reject) => {
      fwd!.stdout!.once("data", () => resolve());
      fwd!.once("exit", (code) => reject(new Error(`the forwarder in ${ns} exited (${code})`)));
    });

    const direct = buildConnector({});
    const connect = ((opts: buildConnector.Options, cb: buildConnector.Callback) => {
      if (opts.hostname !== hostAddr) return direct(opts, cb);
      const s = net.connect(socketPath);
      const fail = (e: Error) => cb(e, null);
      s.once("error", fail);
      s.once("connect", () => {
        s.off("error", fail);
        s.write(`${hostAddr} ${opts.port || (opts.protocol === "https:" ? 443 : 80)}\n`);
        cb(null, s);
      });
    }) as buildConnector.connector;
    const dispatcher = new Agent({ connect });
    const previous = getGlobalDispatcher();
    setGlobalDispatcher(dispatcher);
    const child = fwd;
    return {
      hostAddr,
      nsAddr,
      dispatcher,
      async close() {
        setGlobalDispatcher(previous);
        await dispatcher.close().catch(() => undefined);
        child.stdin?.end();
        child.kill();
        teardown(k);
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (e) {
    fwd?.kill();
    teardown(k);
    throw e;
  }
}
