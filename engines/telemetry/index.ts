// Tracing's switch and its helpers' contract. This file is all the hot path loads: it holds
// `tracing.spans`, set by setup.ts only when tracing is configured (OTEL_* variables or the Server
// manifest's `tracing`), so with tracing off nothing of OpenTelemetry is loaded, no span object is
// made, and every call site pays one check of an undefined field. Types only from the OTel API.
import type { Span } from "@opentelemetry/api";

export type { Span };

/** One span's attributes (OTel's AttributeValue, without arrays of mixed types). */
export type Attrs = Record<string, string | number | boolean | string[] | undefined>;

/** The span helpers (spans.ts), present while tracing is on. */
export interface Spans {
  /** the server span of one HTTP request, continuing an incoming W3C traceparent/tracestate */
  server(method: string, path: string, headers: Record<string, string | string[] | undefined>, attrs?: Attrs): Span;
  /** end a server span with the response's status and the matched route */
  endServer(span: Span, method: string, status: number, route: string | undefined, aborted: boolean): void;
  /** a child span (`parent` a span or a stored traceparent; none: a new trace) */
  child(parent: Span | string | undefined, name: string, kind: "internal" | "client", attrs?: Attrs): Span;
  /** end a span, recording `error` (error.type and the status) when it failed */
  end(span: Span, attrs?: Attrs, error?: unknown): void;
  /** a span's W3C traceparent (and tracestate) for an outgoing request or a stored task */
  headers(span: Span): Record<string, string>;
  traceId(span: Span): string;
  /** whether prompt and completion content may be recorded (off unless configured) */
  readonly content: boolean;
}

export const tracing: { spans?: Spans } = {};

/** Set one attribute when it has a value. The hot path's spans set theirs one by one: an object
 * literal of them per span was garbage on every request, and garbage is most of tracing's cost
 * in a busy server (docs/observability.md). */
export function attr(span: Span, key: string, value: string | number | boolean | string[] | undefined): void {
  if (value !== undefined) span.setAttribute(key, value);
}

/** The trace id of a traced request or task as a log line's field (`trace_id`), from its span or
 * stored traceparent; empty when untraced. Passed explicitly where the line is written: an async
 * context kept for every request would cost each of its promises a hook (docs/observability.md). */
export function traceField(t: Span | string | undefined | null): { trace_id?: string } {
  if (!t) return {};
  if (typeof t === "string") {
    const id = t.split("-")[1];
    return id ? { trace_id: id } : {};
  }
  return { trace_id: t.spanContext().traceId };
}

/** The error.type of a failure: svc's error code, a transport code, else the error's name. */
export function errorType(e: unknown): string {
  const x = e as { code?: unknown; name?: unknown } | undefined;
  if (typeof x?.code === "string" && x.code) return x.code;
  if (typeof x?.name === "string" && x.name && x.name !== "Error") return x.name;
  return "_OTHER";
}
