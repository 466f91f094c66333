// Server.spec.tracing: OpenTelemetry traces declared in the manifest (docs/observability.md).
// The standard OTEL_* environment variables configure the same thing; OTEL_SDK_DISABLED=true
// turns tracing off whatever is declared here.
import { Type, type Static } from "@sinclair/typebox";
import { SecretRef } from "../common";

export const ServerTracing = Type.Object(
  {
    endpoint: Type.String({
      pattern: "^https?://[^\\s]+$",
      description: "The OTLP/HTTP base URL (as OTEL_EXPORTER_OTLP_ENDPOINT): spans go to <endpoint>/v1/traces, e.g. http://127.0.0.1:4318 for an OpenTelemetry Collector.",
    }),
    protocol: Type.Optional(Type.Union([Type.Literal("http/protobuf"), Type.Literal("http/json")], { description: "OTLP encoding (as OTEL_EXPORTER_OTLP_PROTOCOL; default that variable, else http/protobuf)." })),
    headers: Type.Optional(
      Type.Record(Type.String({ pattern: "^[A-Za-z0-9-]{1,100}$" }), SecretRef, {
        description: "Export headers (e.g. Authorization for Langfuse or Honeycomb), each value a secret reference (env:NAME or file:/path).",
      }),
    ),
    serviceName: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: "service.name of svc's spans (default OTEL_SERVICE_NAME, else svc)." })),
    sampleRatio: Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: "Share of new traces recorded (default OTEL_TRACES_SAMPLER, else every one); a trace continued from a client's traceparent follows the client's sampling decision." })),
    recordContent: Type.Boolean({ default: false, description: "Record prompt and completion text on chat spans (redacted like log lines). Off: no content is recorded." }),
  },
  { additionalProperties: false, description: "OpenTelemetry traces over OTLP. Read at start: a change applies at the next restart." },
);
export type ServerTracing = Static<typeof ServerTracing>;
