// Dev tool (not a test): tracing's CPU per request in a process that also makes garbage the way a
// busy server does (about 40 KB a request, some of it live across a few requests), so the
// collector's share of tracing's cost shows, which `npm run bench -- tracing` (no other garbage)
// leaves out. SIZES lists the cases, in alternating rounds: "off" (no spans), "noop" (spans made,
// none exported), "official" (the SDK's BatchSpanProcessor and the official OTLP http/protobuf
// exporter, to a loopback sink), "bsp" (the BatchSpanProcessor, svc's encoder of whole requests),
// a number (svc's processor, encoding-processor.ts, with that
// maxExportBatchSize, to the same sink). CPU time per request, median of 3 rounds.
//   [SIZES=off,noop,official,bsp,512] node --import tsx bench/dev/tracing-garbage.ts
import { BatchSpanProcessor, BasicTracerProvider } from "@opentelemetry/sdk-trace-base";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { makeSpans } from "../../engines/telemetry/spans";
import { tracing } from "../../engines/telemetry";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { EncodingSpanProcessor } from "../../engines/telemetry/encoding-processor";
import { otlpProtobufExporter } from "../../engines/telemetry/exporter";
import { encodeTraceRequest } from "../../engines/telemetry/otlp-proto";
import { OTLPExporterBase } from "@opentelemetry/otlp-exporter-base";
import { createOtlpHttpExportDelegate, convertLegacyHttpOptions } from "@opentelemetry/otlp-exporter-base/node-http";
import { ProtobufTraceSerializer, TraceExporterMetricsHelper } from "@opentelemetry/otlp-transformer";
import { chatSpan, attemptSpan, endCallSpan } from "../../engines/gateway/trace-spans";
import { upstreamSpan, endUpstream } from "../../engines/providers/trace-http";
import { otlpSink } from "../tracing";
import { requestSpans } from "../request-spans";
const oneRequest = requestSpans({ tracing, chatSpan, attemptSpan, endCallSpan, upstreamSpan, endUpstream });
let keep: unknown[] = [];
function garbage(i: number) {
  // ~40 KB of short-lived objects a request, some kept for a few requests (in-flight requests)
  const a: unknown[] = [];
  for (let j = 0; j < 400; j++) a.push({ j, s: `x${i}-${j}`, arr: [j, j + 1, j + 2] });
  keep.push(a);
  if (keep.length > 50) keep = keep.slice(25);
}
function one(i: number) {
  garbage(i);
  oneRequest(i);
}
const url = (await otlpSink()) + "/v1/traces";
/** the official exporter's transport with svc's encoder of a whole request (the pipeline before svc's processor) */
const wholeRequests = () =>
  new OTLPExporterBase(createOtlpHttpExportDelegate(convertLegacyHttpOptions({ url }, "TRACES", "v1/traces", { "Content-Type": "application/x-protobuf" }), { serializeRequest: encodeTraceRequest, deserializeResponse: ProtobufTraceSerializer.deserializeResponse }, "otlp_http_span_exporter", TraceExporterMetricsHelper, undefined));
const run = async (n: number) => { for (let i = 0; i < n; i += 5) { for (let j = 0; j < 5; j++) one(i + j); await new Promise((r) => setImmediate(r)); } };
const res: Record<string, number[]> = {};
const sizes = (process.env.SIZES ?? "off,bsp,512").split(",");
for (let round = 0; round < 3; round++) for (const size of sizes) {
  let p: BasicTracerProvider | undefined;
  if (size !== "off") {
    const noop = { onStart() {}, onEnd() {}, forceFlush: async () => {}, shutdown: async () => {} };
    const batch = { maxExportBatchSize: Number(size), maxQueueSize: Math.max(2048, Number(size)) };
    const processor =
      size === "noop" ? noop
      : size === "official" ? new BatchSpanProcessor(new OTLPTraceExporter({ url }))
      : size === "bsp" ? new BatchSpanProcessor(wholeRequests())
      : new EncodingSpanProcessor(await otlpProtobufExporter({ url }), batch);
    p = new BasicTracerProvider({ resource: resourceFromAttributes({ "service.name": "svc" }), spanProcessors: [processor] });
    tracing.spans = makeSpans(p.getTracer("svc", "0.1"), false);
  } else tracing.spans = undefined;
  await run(5000);
  const c0 = process.cpuUsage(); const n = 30000;
  await run(n);
  await p?.forceFlush();
  const c = process.cpuUsage(c0);
  await p?.shutdown();
  (res[size] ??= []).push((c.user + c.system) / n);
}
const med = (x: number[]) => [...x].sort((a, b) => a - b)[1];
console.log(Object.entries(res).map(([k, v]) => `${k}: ${med(v).toFixed(1)} µs (${v.map((x) => x.toFixed(1)).join(", ")})`).join("\n"));
process.exit(0);
