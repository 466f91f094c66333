// The span helpers behind engines/telemetry (index.ts's Spans), loaded by setup.ts once tracing
// is configured. Parents are passed explicitly (a request's Caller, a Cancellation, a task's stored
// traceparent), not through an async context manager: no async hook runs on the hot path.
// Attributes are set once, after the span starts: given to startSpan they would be sanitised
// (copied and checked) twice by the SDK before the span checks them again, and the SDK skips
// undefined values itself, so no cleaned copy is made here either (both showed in profiles).
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, defaultTextMapGetter, trace, type Context, type Span, type Tracer } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { errorType, type Attrs, type Spans } from "./index";

const w3c = new W3CTraceContextPropagator();
const SERVER = { kind: SpanKind.SERVER };
const CLIENT = { kind: SpanKind.CLIENT };
const INTERNAL = { kind: SpanKind.INTERNAL };

/** The API's key of a context's span, read once by letting trace.setSpan write into a probe. */
const SPAN_KEY = (() => {
  let key: symbol | undefined;
  const probe = { getValue: () => undefined, setValue: (k: symbol) => ((key = k), probe), deleteValue: () => probe };
  trace.setSpan(probe, trace.wrapSpanContext({ traceId: "", spanId: "", traceFlags: 0 }));
  return key!;
})();

/** A context holding just a parent span: what the SDK reads of a context to start a child (its
 * span, and no suppression). trace.setSpan would copy the root context's Map into a new context
 * for every child span, which the profiles showed as garbage; a derived context is a real one. */
class ParentContext implements Context {
  constructor(private readonly span: Span) {}
  getValue(key: symbol): unknown {
    return key === SPAN_KEY ? this.span : undefined;
  }
  setValue(key: symbol, value: unknown): Context {
    return trace.setSpan(ROOT_CONTEXT, this.span).setValue(key, value);
  }
  deleteValue(key: symbol): Context {
    return trace.setSpan(ROOT_CONTEXT, this.span).deleteValue(key);
  }
}

function parentContext(parent: Span | string | undefined): Context {
  if (parent === undefined) return ROOT_CONTEXT;
  if (typeof parent === "string") return w3c.extract(ROOT_CONTEXT, { traceparent: parent }, defaultTextMapGetter);
  return new ParentContext(parent);
}

/** Set the defined attributes (the SDK's setAttributes skips undefined values). */
function setAll(span: Span, attrs: Attrs | undefined): void {
  if (attrs) span.setAttributes(attrs as Record<string, string | number | boolean | string[]>);
}

export function makeSpans(tracer: Tracer, content: boolean): Spans {
  return {
    content,
    server(method, path, headers, attrs) {
      const ctx = headers.traceparent ? w3c.extract(ROOT_CONTEXT, headers, defaultTextMapGetter) : ROOT_CONTEXT;
      const span = tracer.startSpan(method, SERVER, ctx);
      if (!span.isRecording()) return span; // sampled out: only its context is used
      span.setAttribute("http.request.method", method);
      span.setAttribute("url.path", path);
      setAll(span, attrs);
      return span;
    },
    endServer(span, method, status, route, aborted) {
      if (!span.isRecording()) return;
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
      const span = tracer.startSpan(name, kind === "client" ? CLIENT : INTERNAL, parentContext(parent));
      if (span.isRecording()) setAll(span, attrs);
      return span;
    },
    end(span, attrs, error) {
      if (!span.isRecording()) return; // sampled out, or ended already
      setAll(span, attrs);
      if (error !== undefined) {
        span.setAttribute("error.type", errorType(error));
        span.setStatus({ code: SpanStatusCode.ERROR, message: String((error as Error)?.message ?? error).slice(0, 500) });
      }
      span.end();
    },
    headers(span) {
      // W3C trace context, version 00 (what the propagator's inject writes), without the
      // context object the propagator needs per call
      const c = span.spanContext();
      const out: Record<string, string> = { traceparent: `00-${c.traceId}-${c.spanId}-0${Number(c.traceFlags || TraceFlags.NONE).toString(16)}` };
      const state = c.traceState?.serialize();
      if (state) out.tracestate = state;
      return out;
    },
    traceId(span) {
      return span.spanContext().traceId;
    },
  };
}
