// The inference hot path: the inference routes (chat, completions, messages, …; POST only) are
// served here with a LeanContext, without Koa; every other path goes to the Koa app. The steps are
// the ones app.ts gives every Koa request: request id, body limit, the protocol's error shape
// (api/errors.ts), then the body written as Koa would. The caller is authenticated here, once,
// before any route reads its body (api/caller.ts authenticateCaller). Koa's per-request context graph,
// middleware composition and router scan cost about as much as the gateway's own checks, so
// the routes that carry the load skip them (measured in bench/reports/latest.md).
import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import type { Svc } from "../engines/svc";
import { LeanContext, sendBody } from "./http-context";
import type { InferenceRoute } from "./inference-route";
import { renderFailure } from "./errors";
import { beginRequest } from "./request-id";
import { SvcError } from "../engines/errors";
import { authenticateCaller } from "./caller";
import { protocolOf } from "./route-table";
import { canonicalize } from "./canonical-path";

export function inferenceListener(svc: Svc, routes: readonly InferenceRoute[], fallback: RequestListener): RequestListener {
  // matched on the canonical path (api/canonical-path.ts, made by the handler before this runs),
  // lower-cased as the Koa router matches
  const byPath = new Map(routes.map((r) => [r.path.toLowerCase(), r]));
  const protocols = new Map(routes.map((r) => [r, protocolOf(r.path)])); // the metrics' label, judged once per route
  return (req: IncomingMessage, res: ServerResponse) => {
    const route = byPath.get(canonicalize(req).lower);
    if (!route || route.viaKoa?.(req)) return fallback(req, res);
    void serve(svc, route, protocols.get(route)!, new LeanContext(req, res, route.path));
  };
}

async function serve(svc: Svc, route: InferenceRoute, protocol: string, ctx: LeanContext): Promise<void> {
  beginRequest(ctx, svc);
  if (route.renderError) ctx.state.renderError = route.renderError;
  try {
    if (ctx.method !== "POST") {
      ctx.set("allow", "POST");
      throw new SvcError("method_not_allowed", "invalid_request", `${ctx.method} is not allowed on ${route.path}; use POST`);
    }
    if (!route.selfAuthenticating) authenticateCaller(ctx, svc); // before the body is read: a bad key is a 401 whatever the body
    await route.handle(ctx);
  } catch (e) {
    renderFailure(ctx, e, svc.log);
  }
  try {
    sendBody(ctx);
  } catch (e) {
    // a body that cannot be serialized is a bug: a logged 500, never a crashed server
    renderFailure(ctx, e, svc.log);
    sendBody(ctx);
  }
  svc.engines.metrics?.http.count(route.path, ctx.status, protocol);
}
