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
  // liveness: answers as soon as svc listens (boot/starting.ts answers it while svc loads)
  r.get("/health", (ctx) => {
    const loading = svc.readiness?.loading() ?? [];
    ctx.body = { status: "ok", revision: svc.store.revision, ready: loading.length === 0, loading };
  });
  // readiness: 503 until start-up has loaded everything, listing what is still loading
  r.get("/ready", (ctx) => {
    const loading = svc.readiness?.loading() ?? [];
    ctx.status = loading.length ? 503 : 200;
    ctx.body = { ready: loading.length === 0, loading };
  });
  return r;
}
