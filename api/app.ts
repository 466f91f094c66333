// The Koa app: request id, error shape, body limit, then one router per surface.
import Koa from "koa";
import { randomUUID } from "node:crypto";
import { errorMiddleware } from "./errors";
import { GatewayError } from "../engines/gateway/errors";
import { routers } from "./routes";
import type { Svc } from "../engines/svc";

export function createApp(svc: Svc): Koa {
  const app = new Koa({ proxy: false }); // never trust X-Forwarded-For: loopback checks use the socket
  app.silent = true;
  app.use(async (ctx, next) => {
    const id = ctx.get("x-request-id") || `req_${randomUUID().replace(/-/g, "")}`;
    ctx.state.requestId = id;
    ctx.state.bodyLimit = svc.server.limits?.maxBodyBytes;
    ctx.set("x-request-id", id);
    await next();
  });
  app.use(errorMiddleware(svc.log));
  for (const make of routers) {
    const r = make(svc);
    app.use(r.routes());
    app.use(r.allowedMethods());
  }
  app.use(async (ctx) => {
    throw new GatewayError(404, "not_found", `no route for ${ctx.method} ${ctx.path}`);
  });
  return app;
}
