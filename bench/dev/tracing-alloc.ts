// Dev tool (not a test): bytes allocated per traced chat request (its three spans made and ended
// with svc's helpers, no export) and per piece of it; garbage is most of what tracing costs a busy
// server (bench/dev/tracing-garbage.ts). Needs a young generation large enough for no collection:
//   node --expose-gc --min-semi-space-size=128 --max-semi-space-size=128 --import tsx bench/dev/tracing-alloc.ts
import { BasicTracerProvider } from "@opentelemetry/sdk-trace-base";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { makeSpans } from "../../engines/telemetry/spans";
import { tracing } from "../../engines/telemetry";
import { chatSpan, attemptSpan, endCallSpan } from "../../engines/gateway/trace-spans";
import { upstreamSpan, endUpstream } from "../../engines/providers/trace-http";
import { requestSpans } from "../request-spans";
const oneRequest = requestSpans({ tracing, chatSpan, attemptSpan, endCallSpan, upstreamSpan, endUpstream });
const parts: Record<string, (i: number) => void> = {
  all: oneRequest,
  bareSpan() { const s = tracer.startSpan("x"); s.end(); },
  childSpan() { const s = tracer.startSpan("x"); const c = tracing.spans!.child(s, "c", "internal", {}); c.end(); s.end(); },
  lightChild() { const s = tracer.startSpan("x"); const c = tracer.startSpan("c", {}, light(s)); c.end(); s.end(); },
  ctxOnly() { const s = tracer.startSpan("x"); trace.setSpan(ROOT_CONTEXT, s); s.end(); },
  timed() { const t = process.hrtime(); const s = tracer.startSpan("x", { startTime: [t[0], t[1]] }); s.end([t[0], t[1]]); },
  idsOnly() { ids.generateTraceId(); ids.generateSpanId(); },
  attrs10() { const s = tracer.startSpan("x"); for (let j = 0; j < 10; j++) s.setAttribute(K[j], "v"); s.end(); },
};
import { ROOT_CONTEXT, trace, type Context, type Span } from "@opentelemetry/api";
import { RandomIdGenerator } from "@opentelemetry/sdk-trace-base";
const ids = new RandomIdGenerator();
let SPAN_KEY: symbol | undefined;
trace.setSpan({ getValue: () => undefined, setValue(k: symbol) { SPAN_KEY = k; return this; }, deleteValue() { return this; } } as unknown as Context, {} as Span);
class Light { constructor(readonly span: Span) {} getValue(k: symbol) { return k === SPAN_KEY ? this.span : undefined; } setValue(k: symbol, v: unknown) { return trace.setSpan(ROOT_CONTEXT, this.span).setValue(k, v); } deleteValue(k: symbol) { return trace.setSpan(ROOT_CONTEXT, this.span).deleteValue(k); } }
const light = (span: Span): Context => new Light(span) as unknown as Context;
const K = Array.from({ length: 20 }, (_, j) => `attr.key.${j}`);
const noop = { onStart() {}, onEnd() {}, forceFlush: async () => {}, shutdown: async () => {} };
const p = new BasicTracerProvider({ resource: resourceFromAttributes({ "service.name": "svc" }), spanProcessors: [noop] });
const tracer = p.getTracer("svc", "0.1");
tracing.spans = makeSpans(tracer, false);
for (const [name, f] of Object.entries(parts)) {
  for (let i = 0; i < 20000; i++) f(i);
  (globalThis as any).gc();
  const h0 = process.memoryUsage().heapUsed;
  const n = 2000;
  for (let i = 0; i < n; i++) f(i);
  const h1 = process.memoryUsage().heapUsed;
  console.log(name, Math.round((h1 - h0) / n), "bytes allocated per call");
}
