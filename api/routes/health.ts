import Router from "@koa/router";
import type { Svc } from "../../engines/svc";

export default function health(svc: Svc): Router {
  const r = new Router();
  r.get("/health", (ctx) => {
    ctx.body = { status: "ok", revision: svc.store.revision };
  });
  return r;
}
