// Starting and stopping the trace pipeline. Tracing is on when the standard OpenTelemetry
// variables name an exporter endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_TRACES_EXPORTER=otlp) or the Server manifest declares
// `tracing`; OTEL_SDK_DISABLED=true turns it off whatever else says. Only then are the SDK and an
// OTLP exporter imported (http/protobuf, the OTLP default, or http/json), so a server without
// tracing loads none of it. The exporters read the other OTEL_EXPORTER_OTLP_* variables (headers,
// timeout, compression) themselves; the SDK reads OTEL_TRACES_SAMPLER(_ARG) and OTEL_BSP_*.
// Several servers in one process (a test's replicas) share one pipeline, stopped by the last.
import type { Tracer } from "@opentelemetry/api";
import type { Resource } from "@opentelemetry/resources";
import type { Sampler } from "@opentelemetry/sdk-trace-base";
import { tracing } from "./index";
import type { ExporterOptions } from "./exporter";
import type { Warn } from "./export-warnings";

/** The Server manifest's `tracing` (schemas/kinds/server-tracing.ts), header values resolved. */
export interface TracingSettings {
  endpoint?: string;
  protocol?: "http/protobuf" | "http/json";
  headers?: Record<string, string>;
  serviceName?: string;
  /** 0..1: the share of new traces sampled (a continued trace follows its parent's decision) */
  sampleRatio?: number;
  /** record prompt and completion text on spans (redacted like logs) */
  recordContent?: boolean;
}

interface Pipeline {
  tracer: Tracer;
  shutdown(): Promise<void>;
  flush(): Promise<void>;
}

interface Running extends Omit<Pipeline, "tracer"> {
  key: string;
  /** restores OpenTelemetry's default error handler (export failures stop going to svc's log) */
  unreport?: () => void;
}

/** http/json: the SDK's tracer, spans and BatchSpanProcessor, the official exporter. */
async function sdkPipeline(resource: Resource, version: string, sampler: Sampler | undefined, opts: ExporterOptions): Promise<Pipeline> {
  const [{ BasicTracerProvider }, { otlpJsonProcessor }] = await Promise.all([import("@opentelemetry/sdk-trace-base"), import("./exporter")]);
  const provider = new BasicTracerProvider({ resource, spanProcessors: [await otlpJsonProcessor(opts)], ...(sampler ? { sampler } : {}) });
  return { tracer: provider.getTracer("svc", version), shutdown: () => provider.shutdown(), flush: () => provider.forceFlush() };
}

/** http/protobuf: light spans (light-tracer.ts) encoded as they end by svc's span processor, with
 * the sampler and span limits the SDK's provider would configure from the same OTEL_* variables. */
async function lightPipeline(resource: Resource, version: string, sampler: Sampler | undefined, opts: ExporterOptions): Promise<Pipeline> {
  const [{ PooledIds }, { loadDefaultConfig }, { reconfigureLimits }, { LightTracer }, { otlpProtobufProcessor }] = await Promise.all([
    import("./light-ids"),
    import("@opentelemetry/sdk-trace-base/build/src/config.js"),
    import("@opentelemetry/sdk-trace-base/build/src/utility.js"),
    import("./light-tracer"),
    import("./exporter"),
  ]);
  const processor = await otlpProtobufProcessor(opts);
  const config = loadDefaultConfig(); // as BasicTracerProvider merges them
  const limits = { ...config.spanLimits, ...reconfigureLimits({}).spanLimits };
  const tracer = new LightTracer(sampler ?? config.sampler, new PooledIds(), limits, processor.lightSink(resource, { name: "svc", version }));
  return { tracer, shutdown: () => processor.shutdown(), flush: () => processor.forceFlush() };
}

let running: Running | undefined;
let users = 0;

const truthy = (v: string | undefined) => v?.trim().toLowerCase() === "true";

/** Whether the environment (or settings) ask for traces. */
export function tracingWanted(env: NodeJS.ProcessEnv, s?: TracingSettings): boolean {
  if (truthy(env.OTEL_SDK_DISABLED)) return false;
  if (s) return true;
  const exporter = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  if (exporter === "none") return false;
  return !!(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || exporter === "otlp");
}

function protocolOf(env: NodeJS.ProcessEnv, s?: TracingSettings): "http/protobuf" | "http/json" {
  const p = (s?.protocol ?? env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? "http/protobuf").trim().toLowerCase();
  if (p === "http/json" || p === "http/protobuf") return p;
  throw new Error(`OTEL_EXPORTER_OTLP_PROTOCOL ${JSON.stringify(p)} is not supported by svc: use http/protobuf or http/json`);
}

/** Start (or restart with new settings) the trace pipeline when wanted; a second server in the
 * process with the same settings shares it. Returns whether tracing is on. `warn`: where failed
 * exports are reported (svc's log; export-warnings.ts). */
export async function startTracing(env: NodeJS.ProcessEnv, version: string, s?: TracingSettings, warn?: Warn): Promise<boolean> {
  if (!tracingWanted(env, s)) return false;
  const protocol = protocolOf(env, s);
  const key = JSON.stringify([protocol, s ?? null]);
  users++;
  if (running?.key === key) return true;
  if (running) await stopPipeline();
  const [{ ParentBasedSampler, TraceIdRatioBasedSampler }, { resourceFromAttributes, detectResources, envDetector }, { makeSpans }, { reportExportErrors }] = await Promise.all([
    import("@opentelemetry/sdk-trace-base"),
    import("@opentelemetry/resources"),
    import("./spans"),
    import("./export-warnings"),
  ]);
  const url = s?.endpoint ? `${s.endpoint.replace(/\/+$/, "")}/v1/traces` : undefined;
  const exporterOpts = { ...(url ? { url } : {}), ...(s?.headers ? { headers: s.headers } : {}) };
  // service.name: the manifest's serviceName, else OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES),
  // else svc. The env detector's resource is merged over ours (merge lets the argument win), so the
  // manifest's name is merged last: the environment only fills in what the manifest leaves out. An
  // empty OTEL_SERVICE_NAME is unset (`||`, not `??`), as the SDK's env detector reads it.
  const base = resourceFromAttributes({ "service.name": env.OTEL_SERVICE_NAME?.trim() || "svc", "service.version": version }).merge(detectResources({ detectors: [envDetector] }));
  const resource = s?.serviceName ? base.merge(resourceFromAttributes({ "service.name": s.serviceName })) : base;
  await resource.waitForAsyncAttributes?.(); // settled before spans are encoded as they end
  const sampler = s?.sampleRatio !== undefined ? new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(s.sampleRatio) }) : undefined;
  const content = s?.recordContent === true || truthy(env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT);
  const pipeline = protocol === "http/protobuf" ? await lightPipeline(resource, version, sampler, exporterOpts) : await sdkPipeline(resource, version, sampler, exporterOpts);
  tracing.spans = makeSpans(pipeline.tracer, content);
  running = { key, shutdown: pipeline.shutdown, flush: pipeline.flush, unreport: warn ? reportExportErrors(warn) : undefined };
  return true;
}

async function stopPipeline(): Promise<void> {
  const r = running;
  running = undefined;
  tracing.spans = undefined;
  await r?.shutdown().catch(() => undefined); // exports what is buffered; a collector that is gone costs its timeout
  r?.unreport?.();
}

/** One server stopped: the last one flushes and stops the pipeline. */
export async function stopTracing(): Promise<void> {
  if (users === 0) return;
  if (--users === 0) await stopPipeline();
}

/** Export every ended span now (tests and shutdown). */
export async function flushTracing(): Promise<void> {
  await running?.flush();
}
