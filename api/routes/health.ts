import Router from "@koa/router";
import type { Svc } from "../../engines/svc";

export default function health(svc: Svc): Router {
  const r = new Router();
  // Ollama's liveness probe: clients (ollama-js, Open WebUI, editors) GET or HEAD / and expect
  // 200 with a short text
  r.get("/", (ctx) => {
    ctx.type = "text/plain; charset=utf-8";
    ctx.body = "svc is running";
  });
  r.get("/health", (ctx) => {
    ctx.body = { status: "ok", revision: svc.store.revision };
  });
  return r;
}
