// `svc pair …`: pairing and the secure channel from the command line.
// Host side (talks to the local server over loopback): code, invite create, approve, deny, list,
// unpair DEVICE_ID. Device side (--url of the server, --state FILE for the device's key and
// pinned server identity): request (challenge + approval), code CODE, invite accept INVITE,
// unpair (itself), call METHOD PATH [--data JSON] through the secure channel.
import path from "node:path";
import type { Command } from "commander";
import { resolveHome } from "../engines/paths";
import { admin, errorOf, resolveTarget } from "./connect";
import { CliError } from "./errors";
import type { DeviceState } from "./pair-client";

/** The device side (crypto, the secure channel), loaded by the commands that use it. */
const client = () => import("./pair-client");

interface Common {
  port?: string;
  home?: string;
  url?: string;
  state?: string;
  name?: string;
  json?: boolean;
}

const out = (s: string): void => void process.stdout.write(s + "\n");
const stateFile = (o: Common) => o.state ?? path.join(resolveHome(o.home), "paired-device.json");

async function host(o: Common, method: "GET" | "POST", p: string, body?: unknown) {
  const t = await resolveTarget(o);
  const r = await admin(t.base, method, p, body);
  if (r.status >= 300) throw new CliError(errorOf(r));
  return r.json;
}

async function device<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    if (e instanceof (await client()).PairError) throw new CliError(e.message);
    throw e;
  }
}

async function saved(o: Common, s: DeviceState) {
  (await client()).saveState(stateFile(o), s);
  out(o.json ? JSON.stringify({ device_id: s.device_id, scopes: s.scopes, server: s.server, state: stateFile(o) }) : `paired as ${s.device_id} (${s.scopes.join(", ")}); state in ${stateFile(o)}`);
}

const needUrl = (o: Common) => {
  if (!o.url) throw new CliError("--url of the svc to pair with is required (e.g. http://192.168.1.20:1337)");
  return o.url.replace(/\/+$/, "");
};

export function registerPair(program: Command): void {
  const pair = program.command("pair").description("pair devices with this svc and call it through the secure channel");
  const opts = (c: Command) =>
    c
      .option("--port <port>", "port of the local svc (host commands)")
      .option("--home <dir>", "data dir")
      .option("--url <url>", "address of the svc to pair with (device commands)")
      .option("--state <file>", "the device's pairing state (default <home>/paired-device.json)")
      .option("--name <name>", "this device's name", "device")
      .option("--json", "print JSON");

  opts(pair.command("request").description("device: pair by challenge and wait for `svc pair approve` on the host"))
    .option("--wait <seconds>", "how long to wait for approval", "120")
    .action((o: Common & { wait: string }) =>
      device(async () => {
        const url = needUrl(o);
        // a bad value ("2m") is NaN, and a NaN deadline is never passed: the wait would never end
        const wait = Number(o.wait);
        if (!/^\s*\d+(\.\d+)?\s*$/.test(o.wait) || !(wait > 0)) throw new CliError(`--wait: "${o.wait}" is not a number of seconds`);
        const { requestPairing, waitForApproval } = await client();
        const p = await requestPairing(url, o.name ?? "device");
        process.stderr.write(`waiting for approval on the host: svc pair approve ${p.requestId}\n`);
        await saved(o, await waitForApproval(url, o.name ?? "device", p, wait * 1000));
      }),
    );

  opts(pair.command("code [code]").description("host: make a 6-digit one-time code (5 minutes); device: pair with CODE"))
    .option("--scopes <list>", "host: comma-separated scopes for the device")
    .action((code: string | undefined, o: Common & { scopes?: string }) =>
      code
        ? device(async () => saved(o, await (await client()).pairWithCode(needUrl(o), code, o.name ?? "device")))
        : host(o, "POST", "/pair/code", o.scopes ? { scopes: o.scopes.split(",") } : {}).then((j) => out(o.json ? JSON.stringify(j) : `pairing code ${j.code} (valid until ${j.expires_at}, one use)`)),
    );

  const invite = pair.command("invite").description("signed, expiring, single-use pairing invites");
  opts(invite.command("create").description("host: make an invite"))
    .option("--expires-in <seconds>", "validity", "86400")
    .option("--scopes <list>", "comma-separated scopes for the device")
    .option("--invite-url <url>", "address the device should use (default: the server's listen address)")
    .action((o: Common & { expiresIn: string; scopes?: string; inviteUrl?: string }) =>
      host(o, "POST", "/pair-invite", { expires_in: Number(o.expiresIn), scopes: o.scopes?.split(","), url: o.inviteUrl }).then((j) => out(o.json ? JSON.stringify(j) : j.invite)),
    );
  opts(invite.command("accept <invite>").description("device: pair with an invite")).action((inv: string, o: Common) =>
    device(async () => saved(o, await (await client()).acceptInvite(inv, o.name ?? "device", o.url?.replace(/\/+$/, "")))),
  );

  opts(pair.command("approve <requestId>").description("host: approve a pending pairing request"))
    .option("--scopes <list>", "comma-separated scopes for the device")
    .action((id: string, o: Common & { scopes?: string }) =>
      host(o, "POST", `/pair/requests/${encodeURIComponent(id)}/approve`, o.scopes ? { scopes: o.scopes.split(",") } : {}).then((j) => out(o.json ? JSON.stringify(j) : `approved: device ${j.device_id} (${j.name})`)),
    );
  opts(pair.command("deny <requestId>").description("host: deny a pending pairing request")).action((id: string, o: Common) =>
    host(o, "POST", `/pair/requests/${encodeURIComponent(id)}/deny`, {}).then((j) => out(o.json ? JSON.stringify(j) : `denied ${j.request_id}`)),
  );

  opts(pair.command("list").description("host: paired devices and pending requests")).action(async (o: Common) => {
    const devices = (await host(o, "GET", "/pair/devices")).data as any[];
    const pending = (await host(o, "GET", "/pair/requests")).data as any[];
    if (o.json) return out(JSON.stringify({ devices, pending }));
    for (const d of devices) out(`${d.device_id}  ${d.name}  ${d.scopes.join(",")}  paired ${d.paired_at} by ${d.via}`);
    for (const q of pending) out(`${q.request_id}  ${q.name}  pending (from ${q.ip}, until ${q.expires_at})`);
    if (!devices.length && !pending.length) out("no paired devices and no pending requests");
  });

  opts(pair.command("unpair [deviceId]").description("host: unpair DEVICE_ID; device: unpair itself (revokes its key)")).action((id: string | undefined, o: Common) =>
    id
      ? host(o, "POST", "/pair/unpair", { device_id: id }).then((j) => out(o.json ? JSON.stringify(j) : `unpaired ${j.device_id}`))
      : device(async () => {
          const s = (await client()).loadState(stateFile(o));
          const res = await fetch(`${s.url}/pair/unpair`, { method: "POST", headers: { authorization: `Bearer ${s.api_key}`, "content-type": "application/json" }, body: "{}" });
          const j: any = await res.json().catch(() => null);
          if (!res.ok) throw new CliError(j?.error?.message ?? `HTTP ${res.status}`);
          out(o.json ? JSON.stringify(j) : `unpaired ${j.device_id}`);
        }),
  );

  opts(pair.command("call <method> <path>").description("device: one request through the secure channel; prints the answer body as it streams"))
    .option("--data <json>", "request body (JSON)")
    .action((method: string, p: string, o: Common & { data?: string }) =>
      device(async () => {
        const { loadState, SecureSession } = await client();
        const s = loadState(stateFile(o));
        const ses = await SecureSession.forDevice(s);
        let body: unknown;
        if (o.data !== undefined) {
          try {
            body = JSON.parse(o.data);
          } catch {
            throw new CliError("--data is not JSON");
          }
        }
        const a = await ses.call({ method, path: p, body }, (chunk) => process.stdout.write(chunk));
        if (!a.body.length || a.body[a.body.length - 1] !== 10) process.stdout.write("\n");
        if (a.status >= 400) {
          process.stderr.write(`svc answered HTTP ${a.status}\n`);
          process.exitCode = 1;
        }
      }),
    );
}
