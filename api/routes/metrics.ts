// GET /metrics: Prometheus text format (engines/metrics). Access, judged like the admin routes by
// the socket address (api/loopback.ts; X-Forwarded-For never counts):
//   - loopback callers: always;
//   - other callers: with the administrative key (Authorization: Bearer, as Prometheus'
//     `authorization` scrape setting sends it), or by anyone when the Server manifest sets
//     `metrics.public: true` (default false: labels name models, providers and routes in use).
import Router from "@koa/router";
import type { Svc } from "../../engines/svc";
import type { HttpContext } from "../http-context";
import { SvcError } from "../../engines/errors";
import { isLoopback } from "../loopback";
import { callerFrom, tokenFrom } from "../caller";

function mayScrape(svc: Svc, ctx: HttpContext): boolean {
  // a key that is sent is judged by the gate, as on every route (revoked, expired, IP allowlist;
  // a failed attempt alerts)
  // (a token that is no key at all gets the refusal below, which says how metrics may be read)
  const gw = svc.engines.gateway;
  let key = null;
  if (tokenFrom(ctx) !== undefined && gw) {
    try {
      key = gw.gate.identify(callerFrom(ctx), "models:list");
    } catch (e) {
      if (!(e instanceof SvcError && e.code === "invalid_api_key")) throw e;
    }
  }
  // the access line names the key the scrape was made with, as on every keyed route
  // (docs/operations.md: keyId is absent only for anonymous loopback requests and refused keys)
  if (key) ctx.state.keyId = key.id;
  if (isLoopback(ctx) || svc.server.metrics?.public === true) return true;
  return key?.role === "admin";
}

export default function metrics(svc: Svc): Router {
  const r = new Router();
  r.get("/metrics", async (ctx) => {
    if (!mayScrape(svc, ctx)) {
      throw new SvcError("forbidden", "permission_denied", "metrics are served on loopback, to the administrative key, or to anyone when the Server manifest sets metrics.public: true");
    }
    const m = svc.engines.metrics;
    if (!m) throw new SvcError("unavailable", "service_unavailable", "the metrics engine is not running");
    const body = await m.scrape();
    ctx.set("cache-control", "no-store");
    ctx.type = m.contentType;
    ctx.body = body;
  });
  return r;
}
