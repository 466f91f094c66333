// The server span of one HTTP request (HTTP semantic conventions), made only while tracing is on
// (engines/telemetry): an incoming W3C traceparent/tracestate is continued, the span is kept in
// ctx.state.span (the request's Caller carries it to the gate's spans) and ends when the response
// closes, named for the matched route. One shared close listener: no closure per request.
import type { ServerResponse } from "node:http";
import { attr, tracing, type Span, type Spans } from "../engines/telemetry";
import { responseOf, type HttpContext } from "./http-context";
import { clientIp } from "./loopback";

const kCtx = Symbol("svc.traceCtx");
type Traced = ServerResponse & { [kCtx]?: HttpContext };

export function traceRequest(ctx: HttpContext, sp: Spans): void {
  const span = sp.server(ctx.method, ctx.path, ctx.req.headers);
  ctx.state.span = span;
  if (!span.isRecording()) return; // sampled out: its context still propagates and names the trace
  span.setAttribute("url.scheme", "http");
  attr(span, "client.address", clientIp(ctx));
  attr(span, "user_agent.original", ctx.req.headers["user-agent"]);
  attr(span, "svc.request.id", ctx.state.requestId);
  const res = responseOf(ctx) as Traced;
  res[kCtx] = ctx;
  res.on("close", endTraced);
}

function endTraced(this: Traced): void {
  const ctx = this[kCtx];
  const span = ctx?.state.span as Span | undefined;
  if (!ctx || !span) return;
  this[kCtx] = undefined;
  const route = ctx._matchedRoute;
  const sp = tracing.spans;
  if (sp) sp.endServer(span, ctx.method, this.statusCode, typeof route === "string" ? route : undefined, !this.writableFinished);
  else span.end(); // tracing stopped meanwhile
}
