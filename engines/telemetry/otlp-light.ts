// OTLP http/protobuf of light spans (light-span.ts): the Span message otlp-proto.ts writes for the
// SDK's span, the same fields in the same order, from the light span's arrays and times. Most of a
// gateway span's attributes repeat request after request (method, route, model, key id, provider,
// status), so each span name keeps a template: the attributes it had last time and their encoded
// bytes. An attribute equal to the template's is copied with its neighbours in one run; one that
// differs is encoded. A value that changes span after span (a request id, token counts) stays
// encoded each time; one that changed once (another model) is taken into the template.
import { flagsOf, keyValue, spanTail, traceState } from "./otlp-proto";
import type { Writer } from "./otlp-writer";
import type { LightSpan } from "./light-span";

interface Template {
  keys: string[];
  values: unknown[];
  /** the attributes' fields as encoded (tag, length, KeyValue), and where each begins; at[n] is the end */
  bytes: Buffer;
  at: number[];
  /** per attribute: it differed from the template in the span before, so it is not taken in again */
  volatile: boolean[];
}

const NONE: [] = [];

/** Templates by span name; svc's code names its spans, so the map stays small (cleared if not). */
const templates = new Map<string, Template>();

/** shallow equality of attribute values (a one-element array of finish reasons repeats too) */
function same(a: unknown, b: unknown): boolean {
  if (a === b) return typeof a !== "object";
  if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** the span's attributes (field 9 each), copied from its name's template where they repeat */
function attributes(w: Writer, s: LightSpan): void {
  const { keys, values } = s;
  const n = keys.length;
  const t = templates.get(s.name);
  const from = w.pos;
  let rebuild = t === undefined || t.keys.length !== n;
  let run = -1; // first attribute of a run copied from the template
  for (let i = 0; i < n; i++) {
    if (t !== undefined && i < t.keys.length && t.keys[i] === keys[i] && same(t.values[i], values[i])) {
      if (run < 0) run = i;
      continue;
    }
    if (run >= 0) copyRun(w, t!, run, i);
    run = -1;
    if (t === undefined || i >= t.keys.length || t.keys[i] !== keys[i] || !t.volatile[i]) rebuild = true;
    w.tag(9, 2);
    keyValue(w, keys[i], values[i]);
  }
  if (run >= 0) copyRun(w, t!, run, n);
  // attributes that differed were volatile already: they stay so, the template unchanged
  if (!rebuild) return;
  if (templates.size >= 256 && t === undefined) templates.clear();
  const volatile: boolean[] = new Array(n);
  for (let i = 0; i < n; i++) volatile[i] = t !== undefined && i < t.keys.length && t.keys[i] === keys[i] && !same(t.values[i], values[i]);
  const bytes = Buffer.from(w.buf.subarray(from, w.pos)); // a copy: the writer is reused
  templates.set(s.name, { keys: keys.slice(), values: values.slice(), bytes, at: offsets(bytes, n), volatile });
}

/** where each of the n attribute fields in `bytes` begins (each a one-byte tag, then its length as a
 * varint, then the KeyValue), and at[n] its end: read back only when a template is made */
function offsets(bytes: Uint8Array, n: number): number[] {
  const at: number[] = new Array(n + 1);
  let p = 0;
  for (let i = 0; i < n; i++) {
    at[i] = p++;
    let len = 0;
    for (let shift = 0; ; shift += 7) {
      const b = bytes[p++];
      len += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) break;
    }
    p += len;
  }
  at[n] = p;
  return at;
}

/** the template's attributes [i, j) in one copy */
function copyRun(w: Writer, t: Template, i: number, j: number): void {
  const a = t.at[i];
  const len = t.at[j] - a;
  w.room(len);
  const src = t.bytes;
  const dst = w.buf;
  let p = w.pos;
  if (len < 48) for (let k = a; k < a + len; k++) dst[p++] = src[k];
  else p += src.copy(dst, p, a, a + len);
  w.pos = p;
}

/** A light span as field 2 of a ScopeSpans, into its resource's and scope's buffer (the span
 * processor's lightSink keeps that buffer for the batch being filled). */
export function encodeLight(w: Writer, s: LightSpan): void {
  w.tag(2, 2);
  const start = w.open2();
  const ctx = s.spanContext();
  // the ids' bytes where the pooled generator drew them (light-ids.ts), else from their hex
  w.tag(1, 2);
  if (s.traceBuf) w.bytes(s.traceBuf, s.traceAt, 16);
  else w.hex(ctx.traceId);
  w.tag(2, 2);
  if (s.idBuf) w.bytes(s.idBuf, s.idAt, 8);
  else w.hex(ctx.spanId);
  traceState(w, ctx);
  if (s.parentId) {
    w.tag(4, 2);
    if (s.parentBuf) w.bytes(s.parentBuf, s.parentAt, 8);
    else w.hex(s.parentId);
  }
  w.tag(5, 2);
  w.str(s.name);
  w.tag(6, 0);
  w.varint(s.kind + 1); // OTLP's SpanKind is the API's plus one
  w.tag(7, 1);
  w.msTime(s.startMs);
  w.tag(8, 1);
  w.msTime(s.startMs, s.durationMs);
  attributes(w, s);
  spanTail(w, s.droppedAttributes, s.events ?? NONE, s.droppedEvents, s.links ?? NONE, s.droppedLinks, s.status, flagsOf(ctx.traceFlags, s.parentRemote));
  w.close2(start);
}
