// Placeholder: filled in by the owner of this surface.
import Router from "@koa/router";
import type { Svc } from "../../engines/svc";

export default function routes(_svc: Svc): Router {
  return new Router();
}
