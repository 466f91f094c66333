// service.name of the exported spans (engines/telemetry/setup.ts): the Server manifest's
// `serviceName` is used over OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (docs/observability.md:
// "the environment variables fill in what the manifest leaves out"; schemas/kinds/server-tracing.ts:
// "default OTEL_SERVICE_NAME, else svc"), and an OTEL_SERVICE_NAME set but empty counts as unset
// (as the OpenTelemetry SDKs read an empty variable), so the default `svc` applies.
import { describe, it, expect, beforeAll, afterAll, afterEach } from "vitest";
import { otlpReceiver, type Receiver } from "./otlp-receiver";
import { flushTracing, startTracing, stopTracing, type TracingSettings } from "../../engines/telemetry/setup";
import { tracing } from "../../engines/telemetry";

describe("service.name of the exported spans", () => {
  let rx: Receiver;
  const saved = { ...process.env };

  beforeAll(async () => {
    rx = await otlpReceiver();
  });
  afterEach(async () => {
    await stopTracing();
    process.env = { ...saved };
  });
  afterAll(async () => {
    await rx?.close();
    process.env = saved;
  });

  /** start tracing with this environment (and manifest settings), export one span, its service.name */
  async function serviceOf(env: Record<string, string>, s?: TracingSettings): Promise<string> {
    for (const k of Object.keys(process.env)) if (k.startsWith("OTEL_")) delete process.env[k];
    Object.assign(process.env, { OTEL_BSP_SCHEDULE_DELAY: "20" }, env);
    expect(await startTracing(process.env, "0.0.0-test", s)).toBe(true);
    const name = `probe ${Math.random()}`;
    tracing.spans!.end(tracing.spans!.child(undefined, name, "internal"));
    await flushTracing();
    const got = rx.spans.filter((x) => x.name === name);
    expect(got).toHaveLength(1);
    return got[0].service;
  }

  for (const protocol of ["http/protobuf", "http/json"] as const) {
    it(`the manifest's serviceName beats OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (${protocol})`, async () => {
      expect(await serviceOf({ OTEL_SERVICE_NAME: "from-env" }, { endpoint: rx.url, protocol, serviceName: "gateway" })).toBe("gateway");
      await stopTracing();
      expect(await serviceOf({ OTEL_RESOURCE_ATTRIBUTES: "service.name=from-attrs,deployment.environment=prod" }, { endpoint: rx.url, protocol, serviceName: "gateway" })).toBe("gateway");
    });

    it(`without a manifest serviceName, OTEL_SERVICE_NAME names the service, and an empty one leaves the default svc (${protocol})`, async () => {
      expect(await serviceOf({ OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_EXPORTER_OTLP_PROTOCOL: protocol, OTEL_SERVICE_NAME: "from-env" })).toBe("from-env");
      await stopTracing();
      expect(await serviceOf({ OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_EXPORTER_OTLP_PROTOCOL: protocol, OTEL_SERVICE_NAME: "" })).toBe("svc");
      await stopTracing();
      expect(await serviceOf({ OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_EXPORTER_OTLP_PROTOCOL: protocol, OTEL_SERVICE_NAME: "   " })).toBe("svc");
    });
  }
});
