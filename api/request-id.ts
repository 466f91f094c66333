// Where every request starts and ends, on Koa and on the inference listener alike.
// The request id: a sane client-sent X-Request-Id is echoed (so callers can correlate), else one
// is made. It is returned in X-Request-Id and written to the audit entry and the access log line.
// The access line (request id, key id, method, route, status, latency; never the key) is written
// when the response closes, through one shared listener: when info lines are filtered out
// (--log-level warn) nothing is registered and no clock is read.
import type { ServerResponse } from "node:http";
import { performance } from "node:perf_hooks";
import { uniqueId } from "../engines/ids";
import { responseOf, setOwnHeader, type HttpContext } from "./http-context";
import type { Svc } from "../engines/svc";
import { redactString, svcLoggerOf, type SvcLogger } from "./log";
import { tracing } from "../engines/telemetry";
import { traceRequest } from "./trace-request";

const SANE = /^[\w.:-]{1,128}$/;

export function requestIdFor(sent: string | string[] | undefined): string {
  return typeof sent === "string" && SANE.test(sent) ? sent : uniqueId("req_");
}

const kCtx = Symbol("svc.accessCtx");
const kLog = Symbol("svc.accessLog");
const kStart = Symbol("svc.accessStart");
type Tracked = ServerResponse & { [kCtx]?: HttpContext; [kLog]?: SvcLogger; [kStart]?: number };

/** What every request gets first: its id (state and X-Request-Id), the server's body limit, and
 * its access line at the end. */
export function beginRequest(ctx: HttpContext, svc: Svc): void {
  const id = requestIdFor(ctx.req.headers["x-request-id"]);
  ctx.state.requestId = id;
  ctx.state.bodyLimit = svc.server.limits?.maxBodyBytes;
  setOwnHeader(ctx, "x-request-id", id); // checked by SANE or made here
  if (tracing.spans !== undefined) traceRequest(ctx, tracing.spans);
  const log = svcLoggerOf(svc.log);
  if (log !== undefined && log.enabled("info")) {
    const res = responseOf(ctx) as Tracked;
    res[kCtx] = ctx;
    res[kLog] = log;
    res[kStart] = performance.now();
    res.on("close", endRequest); // one shared function: no per-request closure
  }
}

/** The key a request was made with, as an id: set by the pipeline (inference) or a management
 * route (ctx.state.keyId). */
function keyIdOf(ctx: HttpContext): string | undefined {
  return ctx.state.caller?.key?.id ?? ctx.state.keyId;
}

function endRequest(this: Tracked): void {
  const ctx = this[kCtx];
  const log = this[kLog];
  if (ctx === undefined || log === undefined) return;
  this[kCtx] = undefined;
  const matched = ctx._matchedRoute;
  const latencyMs = Math.round((performance.now() - (this[kStart] ?? 0)) * 1000) / 1000;
  log.access({
    requestId: ctx.state.requestId,
    keyId: keyIdOf(ctx),
    method: ctx.method,
    // an unmatched path is the client's text: cut anything shaped like a key out of it
    route: typeof matched === "string" ? matched : redactString(ctx.path),
    status: this.statusCode,
    latencyMs,
    aborted: this.writableFinished ? undefined : true,
    traceId: ctx.state.span?.spanContext().traceId,
  });
}
