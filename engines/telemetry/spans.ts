// The span helpers behind engines/telemetry (index.ts's Spans), loaded by setup.ts once tracing
// is configured. Parents are passed explicitly (a request's Caller, a Cancellation, a task's stored
// traceparent), not through an async context manager: no async hook runs on the hot path.
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, defaultTextMapGetter, defaultTextMapSetter, trace, type Context, type Span, type Tracer } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { errorType, type Attrs, type Spans } from "./index";

const w3c = new W3CTraceContextPropagator();

function clean(attrs: Attrs | undefined): Record<string, string | number | boolean | string[]> | undefined {
  if (!attrs) return undefined;
  const out: Record<string, string | number | boolean | string[]> = {};
  for (const k in attrs) {
    const v = attrs[k];
    if (v !== undefined) out[k] = v;
  }
  return out;
}

function parentContext(parent: Span | string | undefined): Context {
  if (parent === undefined) return ROOT_CONTEXT;
  if (typeof parent === "string") return w3c.extract(ROOT_CONTEXT, { traceparent: parent }, defaultTextMapGetter);
  return trace.setSpan(ROOT_CONTEXT, parent);
}

export function makeSpans(tracer: Tracer, content: boolean): Spans {
  return {
    content,
    server(method, path, headers, attrs) {
      const ctx = headers.traceparent ? w3c.extract(ROOT_CONTEXT, headers, defaultTextMapGetter) : ROOT_CONTEXT;
      return tracer.startSpan(method, { kind: SpanKind.SERVER, attributes: clean({ "http.request.method": method, "url.path": path, ...attrs }) }, ctx);
    },
    endServer(span, method, status, route, aborted) {
      if (route) {
        span.updateName(`${method} ${route}`);
        span.setAttribute("http.route", route);
      }
      span.setAttribute("http.response.status_code", status);
      // HTTP conventions: a server span is an error for 5xx only; error.type names any failure
      if (status >= 400) span.setAttribute("error.type", String(status));
      if (aborted && status < 400) span.setAttribute("error.type", "aborted");
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    },
    child(parent, name, kind, attrs) {
      return tracer.startSpan(name, { kind: kind === "client" ? SpanKind.CLIENT : SpanKind.INTERNAL, attributes: clean(attrs) }, parentContext(parent));
    },
    end(span, attrs, error) {
      const a = clean(attrs);
      if (a) span.setAttributes(a);
      if (error !== undefined) {
        span.setAttribute("error.type", errorType(error));
        span.setStatus({ code: SpanStatusCode.ERROR, message: String((error as Error)?.message ?? error).slice(0, 500) });
      }
      span.end();
    },
    headers(span) {
      const out: Record<string, string> = {};
      w3c.inject(trace.setSpan(ROOT_CONTEXT, span), out, defaultTextMapSetter);
      return out;
    },
    traceId(span) {
      return span.spanContext().traceId;
    },
  };
}
