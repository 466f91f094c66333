// GET /openapi.json: the OpenAPI 3.1 document of every route (built once; it describes the build).
import Router from "@koa/router";
import type { Svc } from "../../engines/svc";
import { openApiDocument } from "../openapi/document";

export default function openapi(_svc: Svc): Router {
  const r = new Router();
  let doc: Record<string, unknown> | undefined;
  r.get("/openapi.json", (ctx) => {
    ctx.body = doc ??= openApiDocument();
  });
  return r;
}
