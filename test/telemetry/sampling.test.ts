// OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG decide which traces svc records (OTLP
// http/protobuf, svc's own spans): with parentbased_traceidratio at 0, a new trace is not recorded
// (the upstream still gets a traceparent, flagged not sampled, and nothing is exported), while a
// trace a client sampled is continued and exported whole, and one it sampled out is carried on
// unrecorded (the trace id still in the audit entry and the log line).
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { startEnv, standIn, provider, type Env, type StandIn } from "../gateway/fixtures";
import { eventually } from "../helpers/http";
import { otlpReceiver, type Receiver } from "./otlp-receiver";
import { flushTracing } from "../../engines/telemetry/setup";

describe("trace sampling from OTEL_TRACES_SAMPLER", () => {
  let env: Env;
  let up: StandIn;
  let rx: Receiver;
  const saved = { ...process.env };

  beforeAll(async () => {
    rx = await otlpReceiver();
    Object.assign(process.env, {
      OTEL_EXPORTER_OTLP_ENDPOINT: rx.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
      OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
      OTEL_TRACES_SAMPLER_ARG: "0",
      OTEL_BSP_SCHEDULE_DELAY: "20",
    });
    up = await standIn();
    env = await startEnv();
    await env.apply([provider("p", up, [{ name: "gpt-x", inputPerMillion: 1, outputPerMillion: 1 }])]);
  });
  afterAll(async () => {
    await env?.stop();
    await up?.close();
    await rx?.close();
    process.env = saved;
  });

  let requestId = "";
  const chat = async (key: string, headers: Record<string, string> = {}) => {
    const n = up.requests.length;
    const res = await fetch(`${env.url}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers }, body: JSON.stringify({ model: "gpt-x", messages: [{ role: "user", content: "hi" }] }) });
    expect(res.status).toBe(200);
    await res.json();
    requestId = res.headers.get("x-request-id") ?? "";
    return String(up.requests[n].headers.traceparent ?? "");
  };

  it("records a new trace at ratio 0 not at all, and a client's sampled trace whole", async () => {
    const k = await env.key();
    const unsampled = await chat(k.secret);
    expect(unsampled).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
    const clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736";
    const continued = await chat(k.secret, { traceparent: `00-${clientTrace}-00f067aa0ba902b7-01` });
    expect(continued).toMatch(new RegExp(`^00-${clientTrace}-[0-9a-f]{16}-01$`));
    await eventually(async () => rx.spans.filter((s) => s.traceId === clientTrace).length >= 3);
    await flushTracing();
    const spans = rx.spans.filter((s) => s.traceId === clientTrace);
    expect(spans.map((s) => s.kind).sort()).toEqual([1, 2, 3]); // chat, server, upstream client
    expect(spans.find((s) => s.kind === 2)!.parentSpanId).toBe("00f067aa0ba902b7");
    expect(rx.spans.filter((s) => s.traceId === unsampled.split("-")[1])).toHaveLength(0);
    expect(new Set(rx.spans.map((s) => s.traceId))).toEqual(new Set([clientTrace]));
  });

  it("carries a client's sampled-out trace on unrecorded: a span id of its own upstream, the trace id in the audit and the log", async () => {
    const k = await env.key();
    const clientTrace = "5bf92f3577b34da6a3ce929d0e0e4736";
    const sent = await chat(k.secret, { traceparent: `00-${clientTrace}-00f067aa0ba902b7-00`, tracestate: "vendor=x" });
    const [, trace, parent, flags] = sent.split("-");
    expect(trace).toBe(clientTrace);
    expect(flags).toBe("00");
    expect(parent).toMatch(/^[0-9a-f]{16}$/);
    expect(parent).not.toBe("00f067aa0ba902b7"); // the attempt's own (unrecorded) span, not the client's
    expect(String(up.requests.at(-1)!.headers.tracestate ?? "")).toBe("vendor=x");
    const rid = requestId;
    await eventually(async () => {
      const r = await env.api("GET", "/v1/audit-logs", undefined, k.secret);
      return (r.json.data ?? []).some((e: any) => e.request_id === rid && e.trace_id === clientTrace);
    });
    expect(env.svc.logs.some((l) => l.requestId === rid && l.trace_id === clientTrace)).toBe(true);
    await flushTracing();
    expect(rx.spans.filter((s) => s.traceId === clientTrace)).toHaveLength(0);
  });
});
