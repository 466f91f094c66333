// The HTTP handler: the inference routes through the lean listener, everything else through
// the Koa app (request id, error shape, body limit, then one router per surface).
import type { RequestListener } from "node:http";
import Koa from "koa";
import Router from "@koa/router";
import { errorMiddleware } from "./errors";
import { SvcError } from "../engines/errors";
import { beginRequest } from "./request-id";
import { inferenceRoutes, routers } from "./routes";
import { inferenceListener } from "./inference-listener";
import { assertRegistered, protocolOf, servedRoutes } from "./route-table";
import { registerHandler } from "./secure-dispatch";
import { withCors } from "./cors";
import { canonicalize } from "./canonical-path";
import { hostRefusal, sendRefusal } from "./host-guard";
import { consoleAuth } from "./console-session";
import type { Svc } from "../engines/svc";

export function createApp(svc: Svc, made: Router[] = routers.map((make) => make(svc))): Koa {
  const app = new Koa({ proxy: false }); // never trust X-Forwarded-For: loopback checks use the socket
  app.silent = true;
  app.use(async (ctx, next) => {
    beginRequest(ctx, svc);
    try {
      await next();
    } finally {
      // the route pattern, never the raw path: unmatched paths share one series
      const route = typeof ctx._matchedRoute === "string" ? ctx._matchedRoute : "unmatched";
      svc.engines.metrics?.http.count(route, ctx.status, protocolOf(route));
    }
  });
  app.use(errorMiddleware(svc.log));
  app.use(consoleAuth()); // a console session's cookie stands for its key (api/console-session.ts)
  // One root router: a request is matched once, not once per surface.
  const root = new Router();
  for (const r of made) root.use(r.routes());
  app.use(root.routes());
  app.use(root.allowedMethods());
  app.use(async (ctx) => {
    throw new SvcError("not_found", "not_found", `no route for ${ctx.method} ${ctx.path}`);
  });
  return app;
}

/** The server's request listener: the path made canonical and the Host rule (DNS rebinding,
 * api/host-guard.ts) before anything else, then CORS, then the inference routes or the Koa app. */
export function createHandler(svc: Svc, extra: Router[] = []): RequestListener {
  const inference = inferenceRoutes.flatMap((make) => make(svc));
  const made = [...routers.map((make) => make(svc)), ...extra];
  assertRegistered(servedRoutes(made, inference)); // a route without its line in the route table never serves
  const routed = withCors(svc, inferenceListener(svc, inference, createApp(svc, made).callback()));
  const handler: RequestListener = (req, res) => {
    let refusal: SvcError | undefined;
    try {
      refusal = hostRefusal(svc, req, canonicalize(req));
    } catch (e) {
      if (!(e instanceof SvcError)) throw e;
      refusal = e;
    }
    if (refusal) return sendRefusal(res, refusal);
    routed(req, res);
  };
  registerHandler(svc, handler); // the secure channel dispatches inner requests here, through the same rule
  return handler;
}
