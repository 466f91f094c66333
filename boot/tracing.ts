// Tracing at start (engines/telemetry/setup.ts): the OTEL_* environment, or the Server manifest's
// `tracing` with its header values resolved from their secret references.
import { readFileSync } from "node:fs";
import type { Logger } from "../engines/svc";
import type { ServerSpec } from "../schemas/kinds/server";
import { resolveSecretRef } from "../engines/secrets/refs";
import type { TracingSettings } from "../engines/telemetry/setup";

const version = (): string => {
  try {
    return JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).version;
  } catch {
    return "unknown";
  }
};

/** Start tracing when configured; returns the stop to run at shutdown (a no-op otherwise). */
export async function startTracingFor(server: Partial<ServerSpec>, log: Logger): Promise<() => Promise<void>> {
  const env = process.env;
  const t = server.tracing;
  if (!t && !env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT && !env.OTEL_TRACES_EXPORTER) return async () => undefined;
  const { startTracing, stopTracing } = await import("../engines/telemetry/setup");
  let settings: TracingSettings | undefined;
  if (t) {
    const headers: Record<string, string> = {};
    for (const [name, ref] of Object.entries(t.headers ?? {})) {
      const v = resolveSecretRef(ref);
      if (v === undefined) log.warn("tracing: an export header's secret reference does not resolve; the header is not sent", { header: name, ref });
      else headers[name] = v;
    }
    settings = { endpoint: t.endpoint, protocol: t.protocol, headers: t.headers ? headers : undefined, serviceName: t.serviceName, sampleRatio: t.sampleRatio, recordContent: t.recordContent };
  }
  try {
    if (!(await startTracing(env, version(), settings, (msg, fields) => log.warn(msg, fields)))) return async () => undefined;
  } catch (e: any) {
    log.warn("tracing is off: its settings are not usable", { err: String(e?.message ?? e) });
    return async () => undefined;
  }
  log.info("tracing on: spans are exported over OTLP", { protocol: settings?.protocol ?? env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? "http/protobuf" });
  return stopTracing;
}
