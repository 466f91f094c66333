// DNS-rebinding protection: one rule, applied to every request before any route runs (the Koa
// app, the lean inference listener, and the secure channel's inner requests, which are dispatched
// to the same handler with the outer caller's address and Host).
//
// svc grants loopback callers trust by their socket address (keyless inference, administration,
// agents, tasks, memory, pairing, media, tools, /mcp). A web page whose DNS name is rebound to
// 127.0.0.1 reaches svc from the loopback socket too, but its browser sends `Host: <its name>`.
// So a loopback request that carries no valid key must name a loopback host (localhost or
// *.localhost, any 127/8 address, [::1], any port) or a name in the Server manifest's
// `spec.allowedHosts`; otherwise it is a 403 permission_denied. A request with a valid key is
// judged by the key (the page cannot know one) and works from any Host. Administration never
// takes a key: it always needs the Host rule, and an Origin, when sent, must be a loopback origin.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Svc } from "../engines/svc";
import { SvcError } from "../engines/errors";
import { openAIBody, statusOf } from "./errors";
import { isLoopbackAddress, parseIp } from "../engines/loopback-address";
import { tokenFrom } from "./caller";
import { isAdminPath, type CanonicalTarget } from "./canonical-path";
import { secureOriginOf } from "./secure-mark";

const IPV4_LOOPBACK = /^127\.(25[0-5]|2[0-4]\d|1?\d?\d)\.(25[0-5]|2[0-4]\d|1?\d?\d)\.(25[0-5]|2[0-4]\d|1?\d?\d)$/;

/** The host name of a Host header value (brackets and port removed, lower case, no final dot). */
export function hostnameOf(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith("[")) {
    const end = h.indexOf("]");
    h = end < 0 ? h.slice(1) : h.slice(1, end);
  } else {
    const colon = h.lastIndexOf(":");
    if (colon >= 0) h = h.slice(0, colon);
  }
  return h.endsWith(".") ? h.slice(0, -1) : h;
}

/** localhost, *.localhost (browsers resolve those to loopback themselves), 127/8, ::1. */
export function isLoopbackName(h: string): boolean {
  if (h === "localhost" || h.endsWith(".localhost")) return true;
  if (IPV4_LOOPBACK.test(h)) return true;
  if (!h.includes(":")) return false;
  return parseIp(h)?.range() === "loopback";
}

/** Does a Server.allowedHosts entry (a name, or *.suffix) match the host name `h`? */
function matchesEntry(entry: string, h: string): boolean {
  const e = hostnameOf(entry);
  if (e.startsWith("*.")) return h.endsWith(e.slice(1)) && h.length > e.length - 1;
  return e === h;
}

// Verdicts per Host value under one effective Server spec (svc.server is replaced when the Server
// manifest changes, which empties the memo).
let memoFor: unknown = null;
const memo = new Map<string, boolean>();

/** Is `host` (a Host header value) a loopback name or one the Server manifest allows? */
export function hostAllowed(svc: Svc, host: string): boolean {
  if (memoFor !== svc.server) {
    memoFor = svc.server;
    memo.clear();
  }
  let ok = memo.get(host);
  if (ok === undefined) {
    const h = hostnameOf(host);
    ok = h !== "" && (isLoopbackName(h) || (svc.server.allowedHosts ?? []).some((e) => matchesEntry(e, h)));
    if (memo.size >= 256) memo.clear();
    memo.set(host, ok);
  }
  return ok;
}

/** An Origin whose host is a loopback name (http or https, any port). "null" is not one. */
export function isLoopbackOrigin(origin: string): boolean {
  let u: URL;
  try {
    u = new URL(origin);
  } catch {
    return false;
  }
  return (u.protocol === "http:" || u.protocol === "https:") && isLoopbackName(hostnameOf(u.host));
}

/** Does the request carry a key svc accepts (valid, not revoked, not expired)? */
function hasValidKey(svc: Svc, req: IncomingMessage): boolean {
  const gw = svc.engines.gateway;
  if (!gw) return false;
  let token: string | undefined;
  try {
    token = tokenFrom({ req, get: (f: string) => headerOf(req, f) } as any);
  } catch {
    return false; // a credential in a form svc does not read is no key
  }
  return token !== undefined && gw.keys.authenticate(token).ok;
}

function headerOf(req: IncomingMessage, field: string): string {
  const v = req.headers[field];
  return v === undefined ? "" : Array.isArray(v) ? v.join(", ") : v;
}

const ADMIN_ORIGINS = "http://localhost, http://127.0.0.1 or http://[::1], any port";

/** Why the request must be refused before any route runs, or undefined to serve it. */
export function hostRefusal(svc: Svc, req: IncomingMessage, target: CanonicalTarget): SvcError | undefined {
  const admin = isAdminPath(target.lower);
  const host = req.headers.host;
  // no Host: not a browser; not on loopback: no loopback trust to abuse
  if (host !== undefined && isLoopbackAddress(req.socket?.remoteAddress) && !hostAllowed(svc, host) && (admin || !hasValidKey(svc, req))) {
    const shown = JSON.stringify(host.slice(0, 200));
    return new SvcError("forbidden",
      "permission_denied",
      `Host ${shown} is not a loopback name (localhost, 127.0.0.1, [::1]) nor listed in the Server manifest's spec.allowedHosts; ` +
        (admin
          ? "administration answers only those names (DNS-rebinding protection): add the name to spec.allowedHosts or use http://localhost"
          : "a request on loopback without a valid API key must name one of them (DNS-rebinding protection): add the name to spec.allowedHosts, or send a key"),
      "host",
    );
  }
  if (admin) {
    const origin = req.headers.origin;
    if (origin !== undefined && !isLoopbackOrigin(origin)) {
      return new SvcError("forbidden", "permission_denied", `administration routes answer only loopback origins (${ADMIN_ORIGINS}); Origin ${origin} is not one`, "origin");
    }
    if (secureOriginOf({ req })) {
      return new SvcError("forbidden", "permission_denied", "administration routes are served on loopback only, never through the secure channel");
    }
  }
  return undefined;
}

/** A refusal made before any route: the API's error body, written straight to the response. */
export function sendRefusal(res: ServerResponse, err: SvcError): void {
  const body = JSON.stringify(openAIBody(err));
  res.writeHead(statusOf(err), { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(body) });
  res.end(body);
}
