// OTLP http/protobuf encoding of svc's ended spans: the bytes of the official
// ProtobufTraceSerializer (@opentelemetry/otlp-transformer: ExportTraceServiceRequest, the same
// fields in the same order, the same grouping by resource and scope) in one pass over reused
// buffers. Spans are encoded one at a time as they end (addSpan, by the span processor,
// encoding-processor.ts) and wrapped in their resource and scope when a batch is sent
// (encodeBatch); test/telemetry/serializer compares the bytes with the official serializer's.
import type { Link, SpanContext, SpanStatus } from "@opentelemetry/api";
import type { ReadableSpan, TimedEvent } from "@opentelemetry/sdk-trace-base";
import { Writer } from "./otlp-writer";

type Value = unknown;
type Attributes = Record<string, Value> | undefined;

const MIN_INT64 = -(2 ** 63);
const MAX_INT64 = 2 ** 63;

function anyValue(w: Writer, v: Value): void {
  switch (typeof v) {
    case "string":
      w.tag(1, 2);
      return w.str(v);
    case "boolean":
      w.tag(2, 0);
      return w.varint(v ? 1 : 0);
    case "number":
      if (Number.isInteger(v) && v >= MIN_INT64 && v < MAX_INT64) {
        w.tag(3, 0);
        return w.varint(v);
      }
      w.tag(4, 1);
      w.room(8);
      w.buf.writeDoubleLE(v, w.pos);
      w.pos += 8;
      return;
  }
  if (v instanceof Uint8Array) {
    w.tag(7, 2);
    w.varint(v.length);
    w.room(v.length);
    w.buf.set(v, w.pos);
    w.pos += v.length;
  } else if (Array.isArray(v)) {
    w.tag(5, 2);
    const arr = w.open();
    for (const item of v) {
      w.tag(1, 2);
      const at = w.open();
      anyValue(w, item);
      w.close(at);
    }
    w.close(arr);
  } else if (typeof v === "object" && v !== null) {
    w.tag(6, 2);
    const list = w.open();
    for (const k in v) {
      if (!Object.prototype.hasOwnProperty.call(v, k)) continue;
      w.tag(1, 2);
      keyValue(w, k, (v as Record<string, Value>)[k]);
    }
    w.close(list);
  }
}

/** one KeyValue message (its tag written by the caller) */
export function keyValue(w: Writer, k: string, v: Value): void {
  const kv = w.open();
  w.tag(1, 2);
  w.str(k);
  w.tag(2, 2);
  const val = w.open();
  anyValue(w, v);
  w.close(val);
  w.close(kv);
}

/** own enumerable keys in for-in order (the official writer's for-in with hasOwnProperty),
 * without for-in's slow path over the SDK's many-keyed attribute objects */
function attributes(w: Writer, attrs: Record<string, Value>, field: number): void {
  const keys = Object.keys(attrs);
  for (let i = 0; i < keys.length; i++) {
    w.tag(field, 2);
    keyValue(w, keys[i], attrs[keys[i]]);
  }
}

/** OTLP's span flags: the W3C trace flags, and whether the parent is remote (known) */
export const flagsOf = (traceFlags: number, remote: boolean | undefined) => (traceFlags & 0xff) | 0x100 | (remote ? 0x200 : 0);

/** fields 1 to 3 of a Span and of a Link alike: trace id, span id and, when set, trace state */
export function ids(w: Writer, c: SpanContext): void {
  w.tag(1, 2);
  w.hex(c.traceId);
  w.tag(2, 2);
  w.hex(c.spanId);
  traceState(w, c);
}

/** field 3 of a Span or a Link: the W3C trace state, when set */
export function traceState(w: Writer, c: SpanContext): void {
  const state = c.traceState?.serialize();
  if (state) {
    w.tag(3, 2);
    w.str(state);
  }
}

function event(w: Writer, e: TimedEvent): void {
  const at = w.open();
  w.tag(1, 1);
  w.time(e.time);
  w.tag(2, 2);
  w.str(e.name);
  if (e.attributes) attributes(w, e.attributes, 3);
  w.tag(4, 0);
  w.varint(e.droppedAttributesCount || 0);
  w.close(at);
}

function link(w: Writer, l: Link): void {
  const at = w.open();
  const c: SpanContext = l.context;
  ids(w, c);
  if (l.attributes) attributes(w, l.attributes, 4);
  w.tag(5, 0);
  w.varint(l.droppedAttributesCount || 0);
  w.tag(6, 5);
  w.fixed32(flagsOf(c.traceFlags, c.isRemote));
  w.close(at);
}

function span(w: Writer, s: ReadableSpan): void {
  const at = w.open();
  const ctx = s.spanContext();
  ids(w, ctx);
  const parent = s.parentSpanContext;
  if (parent?.spanId) {
    w.tag(4, 2);
    w.hex(parent.spanId);
  }
  w.tag(5, 2);
  w.str(s.name);
  // OTLP's SpanKind is the API's plus one (0 is unspecified)
  const kind = s.kind == null ? 0 : s.kind + 1;
  if (kind !== 0) {
    w.tag(6, 0);
    w.varint(kind);
  }
  w.tag(7, 1);
  w.time(s.startTime);
  w.tag(8, 1);
  w.time(s.endTime);
  if (s.attributes) attributes(w, s.attributes, 9);
  spanTail(w, s.droppedAttributesCount, s.events, s.droppedEventsCount, s.links, s.droppedLinksCount, s.status, flagsOf(ctx.traceFlags, parent?.isRemote));
  w.close(at);
}

/** fields 10 to 16 of a Span, after its attributes: the same for the SDK's spans and svc's own
 * (otlp-light.ts) */
export function spanTail(w: Writer, droppedAttributes: number, events: readonly TimedEvent[], droppedEvents: number, links: readonly Link[], droppedLinks: number, status: SpanStatus, flags: number): void {
  w.tag(10, 0);
  w.varint(droppedAttributes);
  for (const e of events) {
    w.tag(11, 2);
    event(w, e);
  }
  w.tag(12, 0);
  w.varint(droppedEvents);
  for (const l of links) {
    w.tag(13, 2);
    link(w, l);
  }
  w.tag(14, 0);
  w.varint(droppedLinks);
  w.tag(15, 2);
  const st = w.open();
  if (status.message) {
    w.tag(2, 2);
    w.str(status.message);
  }
  w.tag(3, 0);
  w.varint(status.code);
  w.close(st);
  w.tag(16, 5);
  w.fixed32(flags);
}

/** one Span as field 2 of a ScopeSpans: what the span processor appends when a span ends */
function encodeSpan(w: Writer, s: ReadableSpan): void {
  w.tag(2, 2);
  span(w, s);
}

export type Resource = ReadableSpan["resource"];
export type Scope = ReadableSpan["instrumentationScope"] & { attributes?: Attributes; droppedAttributesCount?: number };

/** One resource's scopes, each with its spans already encoded (encodeSpan), in first-seen order. */
export type Batch = Map<Resource, Map<Scope, Writer>>;

/** a ScopeSpans: the scope, its encoded spans, the schema url */
function scopeSpans(w: Writer, scope: Scope, spans: Writer): void {
  w.tag(2, 2);
  const at = w.open();
  w.tag(1, 2);
  const sc = w.open();
  w.tag(1, 2);
  w.str(scope.name);
  if (scope.version) {
    w.tag(2, 2);
    w.str(scope.version);
  }
  if (scope.attributes) attributes(w, scope.attributes, 3);
  if (scope.droppedAttributesCount) {
    w.tag(4, 0);
    w.varint(scope.droppedAttributesCount);
  }
  w.close(sc);
  w.room(spans.pos);
  spans.buf.copy(w.buf, w.pos, 0, spans.pos);
  w.pos += spans.pos;
  if (scope.schemaUrl) {
    w.tag(3, 2);
    w.str(scope.schemaUrl);
  }
  w.close(at);
}

const scratch = new Writer();

/** ExportTraceServiceRequest around spans encoded by scope: resource, then scope, in the batch's
 * order. A copy: the transport keeps it for retries while the next request reuses the buffer. */
export function encodeBatch(batch: Batch): Uint8Array {
  const w = scratch;
  w.pos = 0;
  for (const [resource, scopes] of batch) {
    w.tag(1, 2);
    const rs = w.open();
    w.tag(1, 2);
    const r = w.open();
    if (resource.attributes) attributes(w, resource.attributes, 1);
    w.tag(2, 0);
    w.varint(0);
    w.close(r);
    for (const [scope, spans] of scopes) scopeSpans(w, scope, spans);
    if (resource.schemaUrl) {
      w.tag(3, 2);
      w.str(resource.schemaUrl);
    }
    w.close(rs);
  }
  return new Uint8Array(w.buf.subarray(0, w.pos));
}

/** Encodes `span` into `batch` under its resource and scope, in first-seen order as the official
 * serializer groups them; `writer` gives the buffer for a scope seen for the first time. */
export function addSpan(batch: Batch, span: ReadableSpan, writer: () => Writer): void {
  encodeSpan(scopeWriter(batch, span.resource, span.instrumentationScope, writer), span);
}

/** The buffer of a resource's scope in a batch, made when first seen. */
export function scopeWriter(batch: Batch, resource: Resource, scope: Scope, writer: () => Writer): Writer {
  let scopes = batch.get(resource);
  if (!scopes) batch.set(resource, (scopes = new Map()));
  let w = scopes.get(scope);
  if (!w) scopes.set(scope, (w = writer()));
  return w;
}

/** ExportTraceServiceRequest for these spans at once (the tests' comparison with the official
 * serializer, and bench/dev). */
export function encodeTraceRequest(spans: ReadableSpan[]): Uint8Array {
  const batch: Batch = new Map();
  for (const s of spans) addSpan(batch, s, () => new Writer(1 << 12));
  return encodeBatch(batch);
}
