// Failed exports reach svc's log (engines/telemetry/export-warnings.ts): a collector that refuses
// the spans (here: a path it does not serve, answered 404) gives one warning naming the failure,
// for both protocols; more failures within the minute are held back and counted; once tracing
// stops, OpenTelemetry's default handler is back and svc's log hears nothing more.
import { describe, it, expect, beforeAll, afterAll, afterEach } from "vitest";
import { globalErrorHandler } from "@opentelemetry/core";
import { otlpReceiver, type Receiver } from "./otlp-receiver";
import { startTracing, stopTracing } from "../../engines/telemetry/setup";
import { tracing } from "../../engines/telemetry";
import { eventually } from "../helpers/http";

describe("failed trace exports in svc's log", () => {
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

  for (const protocol of ["http/protobuf", "http/json"] as const) {
    it(`a refused export is one warning, later ones within the minute are counted, none after stop (${protocol})`, async () => {
      for (const k of Object.keys(process.env)) if (k.startsWith("OTEL_")) delete process.env[k];
      process.env.OTEL_BSP_SCHEDULE_DELAY = "20";
      const warnings: Array<{ msg: string; fields?: Record<string, unknown> }> = [];
      expect(await startTracing(process.env, "0.0.0-test", { endpoint: `${rx.url}/not-served`, protocol }, (msg, fields) => void warnings.push({ msg, fields }))).toBe(true);
      tracing.spans!.end(tracing.spans!.child(undefined, "lost", "internal"));
      await eventually(async () => warnings.length > 0, 10_000);
      expect(warnings).toHaveLength(1);
      expect(warnings[0].msg).toBe("tracing: spans could not be exported");
      expect(String(warnings[0].fields?.err)).toMatch(/404|Not Found/i);
      expect(warnings[0].fields?.heldBack).toBeUndefined();
      expect(rx.spans.some((s) => s.name === "lost")).toBe(false);

      globalErrorHandler(new Error("a second failure in the same minute")); // held back
      expect(warnings).toHaveLength(1);

      await stopTracing();
      globalErrorHandler(new Error("after stop")); // OpenTelemetry's default handler again
      expect(warnings).toHaveLength(1);
    });
  }
});
