// svc's light spans (engines/telemetry/light-span.ts, light-tracer.ts), which the OTLP
// http/protobuf pipeline makes instead of the SDK's: the same calls made on the SDK's tracer and on
// svc's, with the same ids and times, export the same bytes (the official serializer's for the
// SDK's spans, svc's span processor's for the light ones), attribute templates included; and the
// light tracer samples, suppresses and follows parents as the SDK's does.
import { describe, it, expect } from "vitest";
import { ProtobufTraceSerializer } from "@opentelemetry/otlp-transformer";
import { AlwaysOffSampler, AlwaysOnSampler, BasicTracerProvider, InMemorySpanExporter, ParentBasedSampler, SimpleSpanProcessor, TraceIdRatioBasedSampler, type IdGenerator, type Sampler, type SpanLimits } from "@opentelemetry/sdk-trace-base";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace, type Tracer } from "@opentelemetry/api";
import { ExportResultCode, TraceState, suppressTracing } from "@opentelemetry/core";
import { EncodingSpanProcessor, type EncodedBatch } from "../../engines/telemetry/encoding-processor";
import { LightTracer } from "../../engines/telemetry/light-tracer";
import { PooledIds } from "../../engines/telemetry/light-ids";
import { fromProto } from "./otlp-receiver";

/** ids counted up, so two tracers asked in the same order get the same ones */
class CountingIds implements IdGenerator {
  private n = 0;
  generateTraceId = () => (++this.n).toString(16).padStart(32, "a");
  generateSpanId = () => (++this.n).toString(16).padStart(16, "b");
}

const resource = resourceFromAttributes({ "service.name": "svc", "service.version": "1.2.3" });
const T0 = 1764400000123; // epoch ms

/** What svc's gateway does to its spans, and what it never does but the API allows. */
function scenario(tracer: Tracer): void {
  const remote = trace.setSpanContext(ROOT_CONTEXT, { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: TraceFlags.SAMPLED, isRemote: true, traceState: new TraceState("vendor=x,other=y") });
  const server = tracer.startSpan("POST", { kind: SpanKind.SERVER, startTime: T0, attributes: { "http.request.method": "POST", "url.path": "/v1/chat/completions" } }, remote);
  const chat = tracer.startSpan("chat bench-model", { startTime: T0 + 1 }, trace.setSpan(ROOT_CONTEXT, server));
  chat.setAttributes({
    "gen_ai.operation.name": "chat",
    "gen_ai.request.model": "bench-model",
    "gen_ai.request.temperature": 0.25,
    "svc.big": 2 ** 40 + 3,
    "svc.negative": -42,
    "svc.fallback": true,
    "svc.unicode": "héllo wörld ✓ 𝄞",
    "svc.longer": "é".repeat(9000),
    "svc.numbers": [1, 2.5, -3],
  });
  chat.setAttribute("gen_ai.request.model", "other-model"); // set again: its place kept, its value replaced
  chat.setAttribute("", "empty key is refused");
  chat.setAttribute("svc.object", {} as never);
  chat.setAttribute("svc.mixed", [1, "a"] as never);
  chat.setAttribute("svc.none", undefined as never);
  chat.addEvent("gen_ai.choice", { index: 0, "message.role": "assistant" }, T0 + 2.5);
  chat.addEvent("bare", T0 + 2.75);
  chat.addLink({ context: { traceId: "11111111111111111111111111111111", spanId: "2222222222222222", traceFlags: TraceFlags.NONE, traceState: new TraceState("k=v") }, attributes: { why: "retry" } });
  chat.recordException(Object.assign(new Error("boom"), { stack: "Error: boom\n    at upstream" }), T0 + 3);
  chat.setStatus({ code: SpanStatusCode.ERROR, message: "upstream ✗ failed" });
  // the upstream attempts: one span name, values that repeat, change once, change every time
  for (let i = 0; i < 40; i++) {
    const up = tracer.startSpan("POST", { kind: SpanKind.CLIENT, startTime: T0 + 4 + i }, trace.setSpan(ROOT_CONTEXT, chat));
    up.setAttribute("http.request.method", "POST");
    up.setAttribute("server.address", i < 20 ? "127.0.0.1" : "localhost");
    up.setAttribute("server.port", 4321);
    if (i % 7 === 3) up.setAttribute("svc.sometimes", "here"); // the attributes' keys shift now and then
    up.setAttribute("svc.request.id", `req_${i}`);
    up.setAttribute("gen_ai.response.finish_reasons", [i % 2 ? "stop" : "length"]);
    up.setAttribute("http.response.status_code", i % 10 === 9 ? 500 : 200);
    if (i % 10 === 9) up.setStatus({ code: SpanStatusCode.ERROR });
    up.end(T0 + 4.5 + i + i / 1000);
  }
  chat.updateName("chat other-model");
  chat.end(T0 + 333.789);
  chat.end(T0 + 400); // twice: ignored
  chat.setAttribute("svc.after", "end"); // after the end: ignored
  server.setStatus({ code: SpanStatusCode.OK });
  server.setStatus({ code: SpanStatusCode.ERROR, message: "an ok status stays" });
  server.end(T0 + 334);
  const root = tracer.startSpan("root", { startTime: T0 + 500, links: [{ context: chat.spanContext() }] });
  root.end(T0 + 499); // before its start: a zero duration
}

/** svc's pooled ids, each one drawn also kept as hex in the order drawn (span ids, trace ids) */
class RecordedIds extends PooledIds {
  readonly spanIds: string[] = [];
  readonly traceIds: string[] = [];
  override draw(n: 8 | 16): number {
    const at = super.draw(n);
    (n === 8 ? this.spanIds : this.traceIds).push(this.buf.toString("hex", at, at + n));
    return at;
  }
}

/** the SDK's generator handing out ids recorded before, in the same order */
class ReplayedIds implements IdGenerator {
  constructor(private readonly from: RecordedIds) {}
  private s = 0;
  private t = 0;
  generateTraceId = () => this.from.traceIds[this.t++];
  generateSpanId = () => this.from.spanIds[this.s++];
}

/** the bytes the official serializer writes for the SDK's spans of the scenario, `batch` spans
 * a request */
function sdkBytes(sampler: Sampler, spanLimits?: SpanLimits, batch = 1000, idGenerator: IdGenerator = new CountingIds()): Buffer[] {
  const mem = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ resource, sampler, idGenerator, spanProcessors: [new SimpleSpanProcessor(mem)], ...(spanLimits ? { spanLimits } : {}) });
  scenario(provider.getTracer("svc", "0.1.0"));
  const spans = mem.getFinishedSpans();
  const out: Buffer[] = [];
  for (let i = 0; i < spans.length; i += batch) out.push(Buffer.from(ProtobufTraceSerializer.serializeRequest(spans.slice(i, i + batch))!));
  return out;
}

/** the bytes svc's span processor sends for the light spans of the scenario, `batch` spans a request */
async function lightBatches(sampler: Sampler, spanLimits: SpanLimits = {}, batch = 1000, ids: IdGenerator = new CountingIds()): Promise<Buffer[]> {
  const sent: EncodedBatch[] = [];
  const processor = new EncodingSpanProcessor({ export: (b, done) => (sent.push(b), done({ code: ExportResultCode.SUCCESS })), shutdown: async () => {} }, { maxExportBatchSize: batch });
  const tracer = new LightTracer(sampler, ids, spanLimits, processor.lightSink(resource, { name: "svc", version: "0.1.0", schemaUrl: undefined }));
  scenario(tracer);
  await processor.forceFlush();
  return sent.map((b) => Buffer.from(b.bytes));
}

async function lightBytes(sampler: Sampler, spanLimits: SpanLimits = {}): Promise<Buffer> {
  const sent = await lightBatches(sampler, spanLimits);
  expect(sent).toHaveLength(1);
  return sent[0];
}

describe("svc's light spans", () => {
  it("export the bytes the SDK's spans export for the same calls", async () => {
    const sampler = new ParentBasedSampler({ root: new AlwaysOnSampler() });
    const ours = await lightBytes(sampler);
    expect(ours.equals(sdkBytes(sampler)[0])).toBe(true);
    // batch after batch, the span processor's buffers reused, and the scenario again (its spans'
    // templates kept from the first time)
    const official = sdkBytes(sampler, undefined, 7);
    const batches = await lightBatches(sampler, undefined, 7);
    expect(batches.length).toBe(official.length);
    batches.forEach((b, i) => expect(b.equals(official[i])).toBe(true));
    // the templates' copies decode to each span's own values
    const got = fromProto(ours);
    const ups = got.filter((s) => s.kind === 3);
    expect(ups).toHaveLength(40);
    ups.forEach((s, i) => {
      expect(s.attrs["svc.request.id"]).toBe(`req_${i}`);
      expect(s.attrs["server.address"]).toBe(i < 20 ? "127.0.0.1" : "localhost");
      expect(s.attrs["svc.sometimes"]).toBe(i % 7 === 3 ? "here" : undefined);
      expect(s.attrs["gen_ai.response.finish_reasons"]).toEqual([i % 2 ? "stop" : "length"]);
      expect(s.status).toBe(i % 10 === 9 ? 2 : 0);
    });
    const chat = got.find((s) => s.name === "chat other-model")!;
    expect(chat.attrs["gen_ai.request.model"]).toBe("other-model");
    expect(Object.keys(chat.attrs)).not.toContain("svc.after");
    expect(got.find((s) => s.kind === 2)!.parentSpanId).toBe("b7ad6b7169203331");
  });

  it("export the ids svc's pooled generator drew, as the SDK's spans with those ids do", async () => {
    const sampler = new ParentBasedSampler({ root: new AlwaysOnSampler() });
    const ids = new RecordedIds();
    const ours = await lightBatches(sampler, {}, 1000, ids);
    expect(ours).toHaveLength(1);
    expect(ours[0].equals(sdkBytes(sampler, undefined, 1000, new ReplayedIds(ids))[0])).toBe(true);
    // random, valid (not all zero) and distinct; a child keeps its local parent's trace
    expect(ids.spanIds.length).toBeGreaterThan(40);
    expect(new Set(ids.spanIds).size).toBe(ids.spanIds.length);
    for (const id of [...ids.spanIds, ...ids.traceIds]) expect(id).toMatch(/^[0-9a-f]+$/), expect(id).not.toMatch(/^0+$/);
    const got = fromProto(ours[0]);
    const root = got.find((s) => s.name === "root")!;
    expect(ids.traceIds).toEqual([root.traceId]); // the one new trace: the rest continue the remote one
    const chat = got.find((s) => s.name === "chat other-model")!;
    expect(got.filter((s) => s.kind === 3).every((s) => s.traceId === chat.traceId && s.parentSpanId === chat.spanId)).toBe(true);
    // a new trace's children carry its id's bytes on: root, child, grandchild
    const sent: EncodedBatch[] = [];
    const processor = new EncodingSpanProcessor({ export: (b, done) => (sent.push(b), done({ code: ExportResultCode.SUCCESS })), shutdown: async () => {} });
    const tracer = new LightTracer(sampler, new PooledIds(), {}, processor.lightSink(resource, { name: "svc", version: "0.1.0", schemaUrl: undefined }));
    const top = tracer.startSpan("top");
    const mid = tracer.startSpan("mid", {}, trace.setSpan(ROOT_CONTEXT, top));
    const low = tracer.startSpan("low", { kind: SpanKind.CLIENT }, trace.setSpan(ROOT_CONTEXT, mid));
    for (const s of [low, mid, top]) s.end();
    await processor.forceFlush();
    const chain = fromProto(Buffer.from(sent[0].bytes));
    expect(chain.map((s) => [s.name, s.traceId, s.spanId, s.parentSpanId])).toEqual([
      ["low", top.spanContext().traceId, low.spanContext().spanId, mid.spanContext().spanId],
      ["mid", top.spanContext().traceId, mid.spanContext().spanId, top.spanContext().spanId],
      ["top", top.spanContext().traceId, top.spanContext().spanId, ""],
    ]);
  });

  it("keep the span limits as the SDK's spans do", async () => {
    const sampler = new AlwaysOnSampler();
    const limits = { attributeCountLimit: 3, attributeValueLengthLimit: 4, eventCountLimit: 1, linkCountLimit: 0 };
    expect((await lightBytes(sampler, limits)).equals(sdkBytes(sampler, limits)[0])).toBe(true);
  });

  it("sample as the configured sampler says, and record nothing in a suppressed context", async () => {
    const ids = new CountingIds();
    const ended: string[] = [];
    const tracer = (sampler: Sampler) => new LightTracer(sampler, ids, {}, (s) => ended.push(s.name));
    expect(tracer(new AlwaysOffSampler()).startSpan("off").isRecording()).toBe(false);
    const none = tracer(new TraceIdRatioBasedSampler(0)).startSpan("ratio 0");
    expect(none.isRecording()).toBe(false);
    expect(none.spanContext().traceFlags).toBe(TraceFlags.NONE);
    // a sampled remote parent is followed even when new traces are not sampled
    const remote = trace.setSpanContext(ROOT_CONTEXT, { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: TraceFlags.SAMPLED, isRemote: true });
    const parentBased = tracer(new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(0) }));
    const child = parentBased.startSpan("continued", {}, remote);
    expect(child.isRecording()).toBe(true);
    expect(child.spanContext().traceId).toBe("0af7651916cd43dd8448eb211c80319c");
    const grandchild = parentBased.startSpan("its child", {}, trace.setSpan(ROOT_CONTEXT, child));
    expect(grandchild.spanContext().traceFlags).toBe(TraceFlags.SAMPLED);
    grandchild.end();
    child.end();
    // an unsampled remote parent is not
    const unsampled = trace.setSpanContext(ROOT_CONTEXT, { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: TraceFlags.NONE, isRemote: true });
    expect(parentBased.startSpan("dropped", {}, unsampled).isRecording()).toBe(false);
    expect(tracer(new AlwaysOnSampler()).startSpan("suppressed", {}, suppressTracing(ROOT_CONTEXT)).spanContext().traceId).toBe("00000000000000000000000000000000");
    expect(ended).toEqual(["its child", "continued"]);
    // startActiveSpan runs its function with the span and returns what it returns
    expect(tracer(new AlwaysOnSampler()).startActiveSpan("active", (s) => (s.end(), s.isRecording()))).toBe(false);
  });

  it("leave a sampled-out trace's children out, each with a span id of its own to propagate", () => {
    const ended: string[] = [];
    const ids = new PooledIds();
    const tracer = (sampler: Sampler) => new LightTracer(sampler, ids, {}, (s) => ended.push(s.name));
    const state = new TraceState("vendor=x");
    for (const sampler of [new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(0) }), new TraceIdRatioBasedSampler(0), new AlwaysOffSampler()]) {
      const t = tracer(sampler);
      // a remote parent that is sampled out, with a trace state to carry on
      const remote = trace.setSpanContext(ROOT_CONTEXT, { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: TraceFlags.NONE, isRemote: true, traceState: state });
      const server = t.startSpan("server", { kind: SpanKind.SERVER }, sampler instanceof AlwaysOffSampler ? ROOT_CONTEXT : remote);
      const chat = t.startSpan("chat", {}, trace.setSpan(ROOT_CONTEXT, server));
      const upstream = t.startSpan("POST", { kind: SpanKind.CLIENT }, trace.setSpan(ROOT_CONTEXT, chat));
      const contexts = [server, chat, upstream].map((s) => s.spanContext());
      for (const s of [server, chat, upstream]) {
        expect(s.isRecording()).toBe(false);
        s.setAttribute("ignored", 1);
        s.end();
      }
      expect(new Set(contexts.map((c) => c.traceId)).size).toBe(1);
      expect(new Set(contexts.map((c) => c.spanId)).size).toBe(3);
      for (const c of contexts) {
        expect(c.spanId).toMatch(/^[0-9a-f]{16}$/);
        expect(c.spanId).not.toBe("0000000000000000");
        expect(c.traceFlags).toBe(TraceFlags.NONE);
        if (!(sampler instanceof AlwaysOffSampler)) expect(c.traceState?.serialize()).toBe("vendor=x");
      }
    }
    // an always-on tracer asked for a child of another tracer's sampled-out span samples it
    const off = tracer(new AlwaysOffSampler()).startSpan("left out");
    const child = tracer(new AlwaysOnSampler()).startSpan("sampled", {}, trace.setSpan(ROOT_CONTEXT, off));
    expect(child.isRecording()).toBe(true);
    expect(child.spanContext().traceId).toBe(off.spanContext().traceId);
    child.end();
    expect(ended).toEqual(["sampled"]);
  });
});
