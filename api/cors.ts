// Browser origins. Only origins listed in Server.spec.cors.allowedOrigins get CORS headers (and
// an answered preflight); a request that carries any other cross-origin Origin is refused with 403
// before it reaches a route, so a web page cannot drive svc (on loopback no key may be needed)
// even with "simple" requests the browser sends without a preflight. Same-origin requests (Origin
// naming the host svc was reached at) and requests without Origin (SDKs, curl) pass untouched.
// Administration never gets CORS headers. No Access-Control-Allow-Credentials: svc uses bearer
// keys, never cookies.
import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import type { Svc } from "../engines/svc";
import { SvcError } from "../engines/errors";
import { canonicalize, isAdminPath } from "./canonical-path";
import { sendRefusal } from "./host-guard";

const METHODS = "GET, POST, PUT, PATCH, DELETE, OPTIONS";
const EXPOSE = "x-request-id, retry-after, x-ratelimit-limit-requests, x-ratelimit-remaining-requests, x-ratelimit-reset-requests, idempotent-replayed, location, x-svc-token-count";
const MAX_AGE = "600";

function sameOrigin(origin: string, host: string | undefined): boolean {
  if (!host) return false;
  const i = origin.indexOf("://");
  return i > 0 && origin.slice(i + 3) === host;
}

/** Refused before any route: the API's error body (SvcError), written straight to the socket. */
function refuse(res: ServerResponse, origin: string, admin: boolean): void {
  const why = admin ? "administration routes are never served cross-origin" : "list it in the Server manifest's spec.cors.allowedOrigins";
  sendRefusal(res, new SvcError("forbidden", "permission_denied", `origin ${origin} is not allowed: ${why}`, "origin"));
}

export function withCors(svc: Svc, next: RequestListener): RequestListener {
  return (req: IncomingMessage, res: ServerResponse) => {
    const origin = req.headers.origin;
    if (origin === undefined) return next(req, res); // the common case: no work
    if (sameOrigin(origin, req.headers.host)) return next(req, res);
    // the canonical path (api/canonical-path.ts): /ADMIN, //admin and /v1/../admin are admin too
    const admin = isAdminPath(canonicalize(req).lower);
    const allowed = !admin && (svc.server.cors?.allowedOrigins ?? []).includes(origin);
    if (!allowed) return refuse(res, origin, admin);
    res.setHeader("access-control-allow-origin", origin);
    res.setHeader("vary", "Origin");
    if (req.method === "OPTIONS" && req.headers["access-control-request-method"]) {
      res.setHeader("access-control-allow-methods", METHODS);
      const asked = req.headers["access-control-request-headers"];
      if (asked) res.setHeader("access-control-allow-headers", asked);
      res.setHeader("access-control-max-age", MAX_AGE);
      res.writeHead(204);
      res.end();
      return;
    }
    res.setHeader("access-control-expose-headers", EXPOSE);
    next(req, res);
  };
}
