// The OTLP/HTTP trace exporter: the official one (@opentelemetry/exporter-trace-otlp-*), assembled
// from the same parts (otlp-exporter-base's HTTP export delegate: OTEL_EXPORTER_OTLP_* settings,
// headers, compression, timeout, retries and the concurrency limit; otlp-transformer's metrics
// helper and response parser) with svc's encoder of the request (otlp-proto.ts), which writes the
// official serializer's bytes at a fraction of its cost. http/json keeps the official exporter.
import type { SpanExporter } from "@opentelemetry/sdk-trace-base";

export interface ExporterOptions {
  url?: string;
  headers?: Record<string, string>;
}

export async function otlpExporter(protocol: "http/protobuf" | "http/json", opts: ExporterOptions): Promise<SpanExporter> {
  if (protocol === "http/json") return new (await import("@opentelemetry/exporter-trace-otlp-http")).OTLPTraceExporter(opts);
  const [{ OTLPExporterBase }, { createOtlpHttpExportDelegate, convertLegacyHttpOptions }, { ProtobufTraceSerializer, TraceExporterMetricsHelper }, { encodeTraceRequest }] = await Promise.all([
    import("@opentelemetry/otlp-exporter-base"),
    import("@opentelemetry/otlp-exporter-base/node-http"),
    import("@opentelemetry/otlp-transformer"),
    import("./otlp-proto"),
  ]);
  const serializer = { serializeRequest: encodeTraceRequest, deserializeResponse: ProtobufTraceSerializer.deserializeResponse };
  const config = convertLegacyHttpOptions(opts, "TRACES", "v1/traces", { "Content-Type": "application/x-protobuf" });
  // "otlp_http_span_exporter": the component type the official exporter reports itself as
  return new OTLPExporterBase(createOtlpHttpExportDelegate(config, serializer, "otlp_http_span_exporter", TraceExporterMetricsHelper, undefined));
}
