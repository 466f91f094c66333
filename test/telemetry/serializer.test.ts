// svc's OTLP protobuf encoder (engines/telemetry/otlp-proto.ts) writes the official serializer's
// bytes: the same spans, ended by the real SDK, encoded by both and compared byte for byte; the
// spans cover every field and value type the encoder handles (non-ASCII and long strings, negative,
// 64-bit and fractional numbers, arrays, events, links, trace state, remote parents, two scopes
// and two resources), and the bytes decode in the loopback receiver's reader to the spans made.
// svc's span processor (encoding-processor.ts), which encodes each span as it ends, sends the
// official serializer's bytes for each batch, and batches, drops and flushes as the SDK's
// BatchSpanProcessor does.
import { describe, it, expect } from "vitest";
import { ProtobufTraceSerializer } from "@opentelemetry/otlp-transformer";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace } from "@opentelemetry/api";
import { TraceState } from "@opentelemetry/core";
import { encodeTraceRequest } from "../../engines/telemetry/otlp-proto";
import { EncodingSpanProcessor, type BatchExporter, type EncodedBatch } from "../../engines/telemetry/encoding-processor";
import { ExportResultCode, type ExportResult } from "@opentelemetry/core";
import { fromProto } from "./otlp-receiver";

function provider(service: string, mem: InMemorySpanExporter) {
  return new BasicTracerProvider({ resource: resourceFromAttributes({ "service.name": service, "service.version": "1.2.3", "host.arch": "ünï" }), spanProcessors: [new SimpleSpanProcessor(mem)] });
}

function makeSpans(): ReadableSpan[] {
  const mem = new InMemorySpanExporter();
  const a = provider("svc", mem);
  const b = provider("other", mem);
  const tracer = a.getTracer("svc", "0.1.0");
  const remote = trace.setSpanContext(ROOT_CONTEXT, { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: TraceFlags.SAMPLED, isRemote: true, traceState: new TraceState("vendor=x,other=y") });
  const server = tracer.startSpan("POST /v1/chat/completions", { kind: SpanKind.SERVER }, remote);
  server.setAttributes({ "http.request.method": "POST", "url.path": "/v1/chat/completions", "http.response.status_code": 200 });
  const chat = tracer.startSpan("chat bench-model", { kind: SpanKind.INTERNAL }, trace.setSpan(ROOT_CONTEXT, server));
  chat.setAttributes({
    "gen_ai.request.model": "bench-model",
    "gen_ai.request.temperature": 0.25,
    "gen_ai.usage.input_tokens": 10,
    "gen_ai.response.finish_reasons": ["stop", "length"],
    "svc.cost": 1.5e-7,
    "svc.big": 2 ** 40 + 3,
    "svc.huge": 2 ** 62,
    "svc.negative": -42,
    "svc.fallback": true,
    "svc.off": false,
    "svc.unicode": "héllo wörld ✓ 𝄞",
    "svc.long": "x".repeat(200),
    "svc.longer": "é".repeat(9000),
    "svc.numbers": [1, 2.5, -3],
    "svc.flags": [true, false],
    "": "empty key",
    "svc.empty": "",
  });
  chat.addEvent("gen_ai.choice", { index: 0, "message.role": "assistant" });
  chat.addEvent("bare");
  chat.addLink({ context: { traceId: "11111111111111111111111111111111", spanId: "2222222222222222", traceFlags: TraceFlags.NONE, traceState: new TraceState("k=v") }, attributes: { why: "retry" } });
  chat.setStatus({ code: SpanStatusCode.ERROR, message: "upstream ✗ failed" });
  const up = tracer.startSpan("POST", { kind: SpanKind.CLIENT }, trace.setSpan(ROOT_CONTEXT, chat));
  up.setAttribute("server.port", 4321);
  up.end();
  chat.end();
  server.end();
  a.getTracer("second-scope").startSpan("other scope").end();
  b.getTracer("svc", "0.1.0").startSpan("other resource", { kind: SpanKind.PRODUCER }).end();
  tracer.startSpan("root, ok", {}).end();
  // many spans: the request's length fields need several bytes
  for (let i = 0; i < 300; i++) tracer.startSpan(`span ${i}`, { attributes: { i, "svc.request.id": `req_${i}` } }).end();
  return mem.getFinishedSpans();
}

describe("svc's OTLP protobuf encoder", () => {
  it("writes the official serializer's bytes", () => {
    const spans = makeSpans();
    const official = Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!);
    const ours = Buffer.from(encodeTraceRequest(spans));
    expect(ours.length).toBe(official.length);
    expect(ours.equals(official)).toBe(true);
    // one span alone, and none (an empty request), too
    expect(Buffer.from(encodeTraceRequest(spans.slice(1, 2))).equals(Buffer.from(ProtobufTraceSerializer.serializeRequest(spans.slice(1, 2))!))).toBe(true);
    expect(encodeTraceRequest([]).length).toBe(ProtobufTraceSerializer.serializeRequest([])!.length);
    // and the receiver's reader finds the spans as made
    const got = fromProto(ours);
    expect(got).toHaveLength(spans.length);
    const chat = got.find((s) => s.name === "chat bench-model")!;
    expect(chat.attrs["svc.unicode"]).toBe("héllo wörld ✓ 𝄞");
    expect(chat.attrs["svc.longer"]).toBe("é".repeat(9000));
    expect(chat.attrs["svc.negative"]).toBe(-42);
    expect(chat.attrs["gen_ai.response.finish_reasons"]).toEqual(["stop", "length"]);
    expect(chat.status).toBe(2);
    expect(got.find((s) => s.name === "POST /v1/chat/completions")!.parentSpanId).toBe("b7ad6b7169203331");
  });

  it("keeps no state from one export to the next", () => {
    const spans = makeSpans();
    const first = Buffer.from(encodeTraceRequest(spans));
    encodeTraceRequest(spans.slice(0, 3));
    expect(Buffer.from(encodeTraceRequest(spans)).equals(first)).toBe(true);
  });
});

/** an exporter that keeps what it is given; `hold` leaves exports unanswered until released */
function capture(hold = false) {
  const sent: EncodedBatch[] = [];
  const waiting: Array<() => void> = [];
  let shut = false;
  const exporter: BatchExporter = {
    export(b, done: (r: ExportResult) => void) {
      sent.push(b);
      const ok = () => done({ code: ExportResultCode.SUCCESS });
      if (hold) waiting.push(ok);
      else ok();
    },
    shutdown: async () => void (shut = true),
  };
  return { exporter, sent, release: () => waiting.splice(0).forEach((f) => f()), isShut: () => shut };
}

describe("svc's span processor", () => {
  it("sends the official serializer's bytes, batch by batch", async () => {
    const spans = makeSpans();
    const c = capture();
    const p = new EncodingSpanProcessor(c.exporter, { maxExportBatchSize: 100, maxQueueSize: 1000 });
    for (const s of spans) p.onEnd(s);
    await p.forceFlush();
    expect(c.sent.map((b) => b.count)).toEqual([100, 100, 100, spans.length - 300]);
    c.sent.forEach((b, i) => {
      const official = Buffer.from(ProtobufTraceSerializer.serializeRequest(spans.slice(i * 100, (i + 1) * 100))!);
      expect(Buffer.from(b.bytes).equals(official)).toBe(true);
    });
  });

  it("drops spans while its queue is full, skips unsampled ones and sends the rest on shutdown", async () => {
    const spans = makeSpans().slice(0, 120);
    const c = capture(true);
    const p = new EncodingSpanProcessor(c.exporter, { maxExportBatchSize: 40, maxQueueSize: 60 });
    for (const s of spans.slice(0, 100)) p.onEnd(s); // 40 in export, 20 queued, 40 dropped
    const unsampled = { ...spans[100], spanContext: () => ({ ...spans[100].spanContext(), traceFlags: TraceFlags.NONE }) } as ReadableSpan;
    p.onEnd(unsampled);
    expect(c.sent.map((b) => b.count)).toEqual([40]);
    c.release();
    await new Promise((r) => setImmediate(r));
    for (const s of spans.slice(101)) p.onEnd(s);
    const done = p.shutdown();
    await new Promise((r) => setImmediate(r));
    c.release();
    await done;
    expect(c.sent.map((b) => b.count)).toEqual([40, 39]);
    expect(Buffer.from(c.sent[1].bytes).equals(Buffer.from(ProtobufTraceSerializer.serializeRequest([...spans.slice(40, 60), ...spans.slice(101)])!))).toBe(true);
    expect(c.isShut()).toBe(true);
    p.onEnd(spans[0]); // after shutdown: ignored
    await p.forceFlush();
    expect(c.sent).toHaveLength(2);
  });

  it("sends a partial batch after the schedule delay", async () => {
    const c = capture();
    const p = new EncodingSpanProcessor(c.exporter, { scheduledDelayMillis: 5 });
    p.onEnd(makeSpans()[0]);
    expect(c.sent).toHaveLength(0);
    await expect.poll(() => c.sent.length).toBe(1);
    await p.shutdown();
  });
});
