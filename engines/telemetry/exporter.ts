// The OTLP/HTTP trace exporters. http/json: the official one (@opentelemetry/exporter-trace-otlp-http)
// behind the SDK's BatchSpanProcessor, fed by the SDK's spans. http/protobuf (light spans,
// light-tracer.ts): the official one's parts (otlp-exporter-base's
// HTTP export delegate: OTEL_EXPORTER_OTLP_* settings, headers, compression, timeout, retries and
// the concurrency limit; otlp-transformer's metrics helper and response parser) sending the bytes
// svc's span processor encoded as the spans ended (encoding-processor.ts), which keeps no span
// object alive until its batch is sent.
import type { SpanExporter, SpanProcessor } from "@opentelemetry/sdk-trace-base";
import type { BatchExporter, EncodedBatch, EncodingSpanProcessor } from "./encoding-processor";

export interface ExporterOptions {
  url?: string;
  headers?: Record<string, string>;
}

/** http/json: the SDK's BatchSpanProcessor and the official exporter. */
export async function otlpJsonProcessor(opts: ExporterOptions): Promise<SpanProcessor> {
  const [{ BatchSpanProcessor }, exporter] = await Promise.all([import("@opentelemetry/sdk-trace-base"), otlpJsonExporter(opts)]);
  return new BatchSpanProcessor(exporter);
}

/** http/protobuf: svc's encoding span processor and the official exporter's transport. */
export async function otlpProtobufProcessor(opts: ExporterOptions): Promise<EncodingSpanProcessor> {
  const [{ EncodingSpanProcessor, batchOptionsFromEnv }, exporter] = await Promise.all([import("./encoding-processor"), otlpProtobufExporter(opts)]);
  return new EncodingSpanProcessor(exporter, batchOptionsFromEnv());
}

/** The official OTLP http/protobuf exporter's transport, sending batches svc encoded. */
export async function otlpProtobufExporter(opts: ExporterOptions): Promise<BatchExporter> {
  const [{ OTLPExporterBase }, { createOtlpHttpExportDelegate, convertLegacyHttpOptions }, { ProtobufTraceSerializer }] = await Promise.all([
    import("@opentelemetry/otlp-exporter-base"),
    import("@opentelemetry/otlp-exporter-base/node-http"),
    import("@opentelemetry/otlp-transformer"),
  ]);
  // the request is encoded already: the serializer hands its bytes on
  const serializer = { serializeRequest: (b: EncodedBatch) => b.bytes, deserializeResponse: ProtobufTraceSerializer.deserializeResponse };
  const config = convertLegacyHttpOptions(opts, "TRACES", "v1/traces", { "Content-Type": "application/x-protobuf" });
  // the official TraceExporterMetricsHelper's name, counting a batch's spans
  const metrics = { name: "span" as const, countItems: (b: EncodedBatch) => b.count };
  // "otlp_http_span_exporter": the component type the official exporter reports itself as
  return new OTLPExporterBase(createOtlpHttpExportDelegate(config, serializer, "otlp_http_span_exporter", metrics, undefined));
}

async function otlpJsonExporter(opts: ExporterOptions): Promise<SpanExporter> {
  return new (await import("@opentelemetry/exporter-trace-otlp-http")).OTLPTraceExporter(opts);
}
