// The request id: a sane client-sent X-Request-Id is echoed (so callers can correlate), else one
// is made. It is returned in X-Request-Id and written to the audit entry.
import { uniqueId } from "../engines/ids";
import type { HttpContext } from "./http-context";
import type { Svc } from "../engines/svc";

const SANE = /^[\w.:-]{1,128}$/;

export function requestIdFor(sent: string | string[] | undefined): string {
  return typeof sent === "string" && SANE.test(sent) ? sent : uniqueId("req_");
}

/** What every request gets first, on Koa and on the inference listener alike: its id (state
 * and X-Request-Id) and the server's body limit. */
export function beginRequest(ctx: HttpContext, svc: Svc): void {
  const id = requestIdFor(ctx.req.headers["x-request-id"]);
  ctx.state.requestId = id;
  ctx.state.bodyLimit = svc.server.limits?.maxBodyBytes;
  ctx.set("x-request-id", id);
}
