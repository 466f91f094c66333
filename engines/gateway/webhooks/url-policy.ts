// Where a webhook may be sent.
//   - Never a URL with credentials in it (userinfo, or a credential-looking query parameter):
//     receivers verify the svc-webhook-signature header made with webhook.secret instead.
//   - HTTPS anywhere, plain HTTP only to a loopback receiver (127.0.0.0/8, ::1, localhost), so
//     event data and signatures never cross a network in clear.
//   - Internal receivers (loopback, private RFC 1918 / unique-local fc00::/7, link-local such as
//     the cloud metadata address, unspecified, and every other non-global range) only when the
//     administrator or a manifest named the URL. Any other key (an organization key with
//     manage_keys) may name only public https receivers: otherwise svc would be a server-side
//     request forgery into the host's loopback services (its own admin routes among them) and
//     private networks. The address a name resolves to is checked again at each delivery
//     (guardedLookup), since a name can be rebound after it was accepted; redirects are never
//     followed.
import dns from "node:dns";
import type { LookupFunction } from "node:net";
import { isLoopbackAddress, parseIp } from "../../loopback-address";
import { urlCredentialProblem } from "../../../manifests/url-credentials";

export interface ReachOptions {
  /** may the URL reach internal addresses (the administrator or a manifest named it) */
  internal: boolean;
}

const TRUSTED: ReachOptions = { internal: true };

export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  return h === "localhost" || h.endsWith(".localhost") || isLoopbackAddress(h);
}

/** Is this an address on the public internet (global unicast)? IPv4-mapped forms are unwrapped;
 * NAT64, 6to4 and Teredo forms, which embed an IPv4 address, count as not public. */
export function isPublicAddress(addr: string): boolean {
  const ip = parseIp(addr.replace(/^\[|\]$/g, ""));
  return ip !== null && ip.range() === "unicast";
}

// Names that only mean something inside a network (mDNS, split-horizon suffixes, single labels).
const INTERNAL_NAME = /(^|\.)(localhost|local|internal|intranet|lan|home\.arpa|corp)$/;

/** Why a name or literal may not be a public receiver's host, or undefined. */
function internalHostReason(hostname: string): string | undefined {
  const h = hostname.replace(/^\[|\]$/g, "").toLowerCase().replace(/\.$/, "");
  if (parseIp(h) !== null) return isPublicAddress(h) ? undefined : `${h} is not a public address`;
  if (INTERNAL_NAME.test(h) || !h.includes(".")) return `${h} is not a public host name`;
  return undefined;
}

/** undefined when the URL may be called, else why not (stored as the delivery's lastError). */
export function refuseReason(url: string, reach: ReachOptions = TRUSTED): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `webhook url is not a valid URL`;
  }
  const cred = urlCredentialProblem(url, "webhook.secret (receivers verify the svc-webhook-signature header)");
  if (cred) return `webhook url ${cred}`;
  if (u.protocol !== "https:" && u.protocol !== "http:") return `refused: webhook url must use https, got ${u.protocol}//${u.host}`;
  if (!reach.internal) {
    if (u.protocol !== "https:") return `refused: webhook url must use https (only the administrator may name a plain-http loopback receiver), got ${u.protocol}//${u.host}`;
    const why = internalHostReason(u.hostname);
    if (why) return `refused: only the administrator may name an internal receiver (loopback, private, link-local); ${why}`;
    return undefined;
  }
  if (u.protocol === "https:") return undefined;
  if (isLoopbackHost(u.hostname)) return undefined;
  return `refused: webhook url must use https (plain http is allowed only for loopback receivers), got ${u.protocol}//${u.host}`;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/**
 * A `lookup` for sockets to receivers that must be public: resolves the name (with `resolve`,
 * dns.lookup by default) and fails the connection when any address it gets is not public, so a
 * name rebound to 127.0.0.1 or 169.254.169.254 after it was accepted is never connected to.
 * The check and the connection use the same answer (no second resolution to race).
 */
export function guardedLookup(resolve: typeof dns.lookup = dns.lookup): LookupFunction {
  return ((hostname: string, options: dns.LookupOptions, callback: LookupCallback) => {
    resolve(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, options.all ? [] : "", undefined);
      const list = addresses as dns.LookupAddress[];
      const bad = list.find((a) => !isPublicAddress(a.address));
      if (bad || !list.length) {
        const e: NodeJS.ErrnoException = new Error(`refused: ${hostname} resolves to ${bad ? `${bad.address}, which is not a public address` : "no address"}`);
        e.code = "ERR_WEBHOOK_INTERNAL_ADDRESS";
        return callback(e, options.all ? [] : "", undefined);
      }
      if (options.all) return callback(null, list);
      callback(null, list[0].address, list[0].family);
    });
  }) as LookupFunction;
}
