// The test suite's outbound guard. Under SVC_TEST_ROOT (set by every test run and by .ci/run), svc's
// outbound HTTP (providers, webhooks, MCP and its OAuth token fetch, media) may connect only to
// loopback, or to NETNS_RANGE, the range test/helpers/netns.ts gives the network namespaces tests
// make. Anything else is refused in the connector, before a socket is opened, with an error that
// says why: a test that aims off the machine fails at once instead of sending. Host names other
// than localhost are refused without a lookup (resolving one could itself query DNS off the
// machine). Without SVC_TEST_ROOT both hooks return what the call site used before, unchanged.
import dns from "node:dns";
import net from "node:net";
import { Agent, buildConnector, fetch as undiciFetch } from "undici";
import ipaddr from "ipaddr.js";
import { parseIp } from "../loopback-address";

/** TEST-NET-2 (RFC 5737): documentation addresses, routed nowhere. Not TEST-NET-1: some machines
 * (this project's among them) use 192.0.2.0/24 for their own interface. */
export const NETNS_RANGE = "198.51.100.0/24";
const netns = ipaddr.parseCIDR(NETNS_RANGE);

export const guardOn = (): boolean => !!process.env.SVC_TEST_ROOT;

export class OutboundRefused extends Error {
  readonly code = "ERR_SVC_OUTBOUND_REFUSED";
  constructor(host: string, why: string) {
    super(`outbound guard (SVC_TEST_ROOT is set): refused to connect to ${host}: ${why}; tests may reach only loopback or ${NETNS_RANGE} (a network namespace the test made)`);
    this.name = "OutboundRefused";
  }
}

export function allowedAddress(addr: string): boolean {
  const ip = parseIp(addr);
  if (!ip) return false;
  if (ip.range() === "loopback") return true;
  return ip.kind() === "ipv4" && (ip as ipaddr.IPv4).match(netns as [ipaddr.IPv4, number]);
}

/** Resolves when svc may connect to host; throws OutboundRefused otherwise. */
export async function checkOutbound(host: string): Promise<void> {
  const h = host.replace(/^\[|\]$/g, "");
  if (net.isIP(h)) {
    if (!allowedAddress(h)) throw new OutboundRefused(host, "not a loopback address");
    return;
  }
  const name = h.toLowerCase().replace(/\.$/, "");
  if (name !== "localhost" && !name.endsWith(".localhost")) throw new OutboundRefused(host, "a host name other than localhost");
  const found = await dns.promises.lookup(name, { all: true }).catch(() => []);
  const off = found.filter((a) => !allowedAddress(a.address)).map((a) => a.address);
  if (!found.length || off.length) throw new OutboundRefused(host, `${name} resolves to ${off.join(", ") || "nothing"}`);
}

type Connector = buildConnector.connector;

/** A call site's own lookup (a stricter check, such as the webhooks' public-address rule) runs
 * first, so its refusal is the one reported; the guard then checks what that lookup returned. */
function siteLookup(lookup: unknown, host: string): Promise<string[] | null> {
  if (typeof lookup !== "function") return Promise.resolve(null);
  return new Promise((resolve, reject) =>
    (lookup as typeof dns.lookup)(host, { all: true }, (err, found) => (err ? reject(err) : resolve((found as dns.LookupAddress[]).map((a) => a.address)))),
  );
}

function guardedConnector(timeout?: number, socket: Record<string, unknown> = {}): Connector {
  const base = buildConnector({ timeout, ...socket });
  return ((opts: buildConnector.Options, cb: buildConnector.Callback) => {
    siteLookup(socket.lookup, opts.hostname)
      .then(async (found) => {
        if (!found) return checkOutbound(opts.hostname);
        const off = found.filter((a) => !allowedAddress(a));
        if (off.length) throw new OutboundRefused(opts.hostname, `resolves to ${off.join(", ")}`);
      })
      .then(
        () => base(opts, cb),
        (e) => cb(e, null),
      );
  }) as Connector;
}

/** Spread into an undici Pool/Agent's options: `{}` (or the call site's own socket options, such
 * as a checking `lookup`) normally, a guarded connector keeping those options under tests. A
 * connector replaces the connectTimeout option, so pass that here as `timeout`. */
export function outboundConnect(timeout?: number, socket?: Record<string, unknown>): { connect?: Connector | Record<string, unknown> } {
  if (guardOn()) return { connect: guardedConnector(timeout, socket) };
  return socket ? { connect: socket } : {};
}

let guardedAgent: Agent | undefined;

/** The fetch for outbound calls: the global one normally, one through the guard under tests. */
export function outboundFetch(): typeof fetch {
  if (!guardOn()) return globalThis.fetch;
  guardedAgent ??= new Agent({ connect: guardedConnector() });
  const agent = guardedAgent;
  return ((url: any, init?: any) => undiciFetch(url, { ...init, dispatcher: agent })) as unknown as typeof fetch;
}
