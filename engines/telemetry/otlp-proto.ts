// OTLP http/protobuf encoding of svc's ended spans: the bytes of the official
// ProtobufTraceSerializer (@opentelemetry/otlp-transformer: ExportTraceServiceRequest, the same
// fields in the same order, the same grouping by resource and scope), in one pass over one reused
// buffer instead of a sizing pass and a writing pass with a bounds check per byte. It was the
// largest part of tracing's cost per request (docs/observability.md); test/telemetry/serializer
// compares its bytes with the official serializer's. The official transport sends them.
import type { HrTime, Link, SpanContext } from "@opentelemetry/api";
import type { ReadableSpan, TimedEvent } from "@opentelemetry/sdk-trace-base";

type Value = unknown;
type Attributes = Record<string, Value> | undefined;

/** A growing byte buffer, reused from one export to the next (exports are encoded synchronously). */
class Writer {
  buf = Buffer.allocUnsafe(1 << 16);
  pos = 0;

  room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** a varint below 2^32 (tags, lengths, counts), room already made */
  u32(v: number): void {
    const b = this.buf;
    while (v > 0x7f) {
      b[this.pos++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    b[this.pos++] = v;
  }

  /** any integer as a varint (negative: 64-bit two's complement, as the official writer) */
  varint(value: number): void {
    this.room(10);
    if (value >= 0 && value <= 0xffffffff) return this.u32(value);
    let low: number;
    let high: number;
    const abs = Math.abs(value);
    low = abs >>> 0;
    high = (abs / 0x100000000) >>> 0;
    if (value < 0) {
      low = ~low >>> 0;
      high = ~high >>> 0;
      low = (low + 1) >>> 0;
      if (low === 0) high = (high + 1) >>> 0;
    }
    const b = this.buf;
    while (high > 0 || low > 0x7f) {
      b[this.pos++] = (low & 0x7f) | 0x80;
      low = ((low >>> 7) | (high << 25)) >>> 0;
      high >>>= 7;
    }
    b[this.pos++] = low & 0x7f;
  }

  tag(field: number, wire: number): void {
    this.room(3);
    this.u32((field << 3) | wire);
  }

  /** a string's length and UTF-8 bytes: short ASCII by a loop, the rest by Buffer's encoder */
  str(s: string): void {
    const n = s.length;
    if (n < 128) {
      this.room(n + 1);
      const b = this.buf;
      let p = this.pos + 1;
      let i = 0;
      for (; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c > 127) break;
        b[p++] = c;
      }
      if (i === n) {
        b[this.pos] = n;
        this.pos = p;
        return;
      }
    }
    const len = Buffer.byteLength(s, "utf8");
    this.room(len + 5);
    this.u32(len);
    this.pos += this.buf.write(s, this.pos, len, "utf8");
  }

  /** 16 or 8 bytes from a trace or span id's hex */
  hex(h: string): void {
    const n = h.length >> 1;
    this.room(n + 1);
    const b = this.buf;
    let p = this.pos;
    b[p++] = n;
    for (let i = 0; i < h.length; i += 2) b[p++] = HEX[((h.charCodeAt(i) & 0x7f) << 7) | (h.charCodeAt(i + 1) & 0x7f)];
    this.pos = p;
  }

  fixed32(v: number): void {
    this.room(4);
    this.buf.writeUInt32LE(v >>> 0, this.pos);
    this.pos += 4;
  }

  /** an HrTime as nanoseconds since the epoch (fixed64), with the official writer's arithmetic */
  time(t: HrTime): void {
    const sLow = t[0] & 0xffff;
    const sHigh = (t[0] / 0x10000) >>> 0;
    const fromLow = sLow * 1e9;
    const fromHigh = sHigh * 1e9;
    const low = (fromLow >>> 0) + (((fromHigh & 0xffff) * 0x10000) >>> 0) + t[1];
    const high = (Math.floor(fromLow / 0x100000000) + ((fromHigh / 0x10000) >>> 0) + Math.floor(low / 0x100000000)) >>> 0;
    this.room(8);
    this.buf.writeUInt32LE(low >>> 0, this.pos);
    this.buf.writeUInt32LE(high, this.pos + 4);
    this.pos += 8;
  }

  /** open a length-delimited field: one byte kept for the length (most messages are short) */
  open(): number {
    this.room(1);
    return this.pos++;
  }

  /** close it: the length written, the body moved on when it needs more than the one byte */
  close(at: number): void {
    const len = this.pos - at - 1;
    if (len < 0x80) {
      this.buf[at] = len;
      return;
    }
    const size = len < 0x4000 ? 2 : len < 0x200000 ? 3 : len < 0x10000000 ? 4 : 5;
    this.room(size - 1);
    this.buf.copyWithin(at + size, at + 1, this.pos);
    this.pos += size - 1;
    const end = this.pos;
    this.pos = at;
    this.u32(len);
    this.pos = end;
  }
}

const nibble = (c: number) => (c <= 57 ? c - 48 : c <= 70 ? c - 55 : c - 87);
/** a byte from two hex digits' char codes, (high << 7) | low */
const HEX = new Uint8Array(1 << 14);
for (const a of "0123456789abcdefABCDEF") for (const b of "0123456789abcdefABCDEF") HEX[(a.charCodeAt(0) << 7) | b.charCodeAt(0)] = (nibble(a.charCodeAt(0)) << 4) | nibble(b.charCodeAt(0));

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
function keyValue(w: Writer, k: string, v: Value): void {
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
const flagsOf = (traceFlags: number, remote: boolean | undefined) => (traceFlags & 0xff) | 0x100 | (remote ? 0x200 : 0);

/** fields 1 to 3 of a Span and of a Link alike: trace id, span id and, when set, trace state */
function ids(w: Writer, c: SpanContext): void {
  w.tag(1, 2);
  w.hex(c.traceId);
  w.tag(2, 2);
  w.hex(c.spanId);
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
  w.tag(10, 0);
  w.varint(s.droppedAttributesCount);
  for (const e of s.events) {
    w.tag(11, 2);
    event(w, e);
  }
  w.tag(12, 0);
  w.varint(s.droppedEventsCount);
  for (const l of s.links) {
    w.tag(13, 2);
    link(w, l);
  }
  w.tag(14, 0);
  w.varint(s.droppedLinksCount);
  w.tag(15, 2);
  const st = w.open();
  if (s.status.message) {
    w.tag(2, 2);
    w.str(s.status.message);
  }
  w.tag(3, 0);
  w.varint(s.status.code);
  w.close(st);
  w.tag(16, 5);
  w.fixed32(flagsOf(ctx.traceFlags, parent?.isRemote));
  w.close(at);
}

type Scope = ReadableSpan["instrumentationScope"] & { attributes?: Attributes; droppedAttributesCount?: number };

function scopeSpans(w: Writer, spans: ReadableSpan[]): void {
  const at = w.open();
  const scope = spans[0].instrumentationScope as Scope;
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
  for (const s of spans) {
    w.tag(2, 2);
    span(w, s);
  }
  if (scope.schemaUrl) {
    w.tag(3, 2);
    w.str(scope.schemaUrl);
  }
  w.close(at);
}

const scratch = new Writer();

/** ExportTraceServiceRequest for these spans: resource, then scope, in first-seen order. */
export function encodeTraceRequest(spans: ReadableSpan[]): Uint8Array {
  const byResource = new Map<ReadableSpan["resource"], Map<ReadableSpan["instrumentationScope"], ReadableSpan[]>>();
  for (const s of spans) {
    let scopes = byResource.get(s.resource);
    if (!scopes) byResource.set(s.resource, (scopes = new Map()));
    const list = scopes.get(s.instrumentationScope);
    if (list) list.push(s);
    else scopes.set(s.instrumentationScope, [s]);
  }
  const w = scratch;
  w.pos = 0;
  for (const [resource, scopes] of byResource) {
    w.tag(1, 2);
    const rs = w.open();
    w.tag(1, 2);
    const r = w.open();
    if (resource.attributes) attributes(w, resource.attributes, 1);
    w.tag(2, 0);
    w.varint(0);
    w.close(r);
    for (const list of scopes.values()) {
      w.tag(2, 2);
      scopeSpans(w, list);
    }
    if (resource.schemaUrl) {
      w.tag(3, 2);
      w.str(resource.schemaUrl);
    }
    w.close(rs);
  }
  // a copy: the transport keeps it for retries while the next export reuses the buffer
  return new Uint8Array(w.buf.subarray(0, w.pos));
}
