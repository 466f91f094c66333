// svc's OTLP protobuf encoder (engines/telemetry/otlp-proto.ts) writes the official serializer's
// bytes: the same spans, ended by the real SDK, encoded by both and compared byte for byte; the
// spans cover every field and value type the encoder handles (non-ASCII and long strings, negative,
// 64-bit and fractional numbers, arrays, events, links, trace state, remote parents, two scopes
// and two resources), and the bytes decode in the loopback receiver's reader to the spans made.
import { describe, it, expect } from "vitest";
import { ProtobufTraceSerializer } from "@opentelemetry/otlp-transformer";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace } from "@opentelemetry/api";
import { TraceState } from "@opentelemetry/core";
import { encodeTraceRequest } from "../../engines/telemetry/otlp-proto";
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
