// Tracing off: with OTEL_SDK_DISABLED=true (even beside an endpoint) svc makes no span, exports
// nothing, sends no traceparent upstream and writes no trace_id, and an incoming traceparent is
// not echoed to the upstream either.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { startEnv, standIn, provider, type Env, type StandIn } from "../gateway/fixtures";
import { otlpReceiver, type Receiver } from "./otlp-receiver";
import { tracing } from "../../engines/telemetry";
import { eventually } from "../helpers/http";

describe("tracing off", () => {
  let env: Env;
  let a: StandIn;
  let rx: Receiver;
  const saved = { ...process.env };

  beforeAll(async () => {
    rx = await otlpReceiver();
    Object.assign(process.env, { OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_SDK_DISABLED: "true", OTEL_BSP_SCHEDULE_DELAY: "20" });
    a = await standIn();
    env = await startEnv();
    await env.apply([provider("a-main", a, [{ name: "gpt-x" }])]);
  });
  afterAll(async () => {
    await env?.stop();
    await a?.close();
    await rx?.close();
    process.env = saved;
  });

  it("OTEL_SDK_DISABLED=true: no span helpers, no export, no traceparent upstream, no trace_id", async () => {
    expect(tracing.spans).toBeUndefined();
    const k = await env.key();
    const res = await fetch(`${env.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${k.secret}`, "content-type": "application/json", traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" },
      body: JSON.stringify({ model: "gpt-x", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(200);
    expect(a.requests.at(-1)?.headers.traceparent).toBeUndefined();
    const rid = res.headers.get("x-request-id");
    const line = env.svc.logs.find((l) => l.requestId === rid && l.msg === "request");
    expect(line).toBeDefined();
    expect(line!.trace_id).toBeUndefined();
    let entry: any;
    await eventually(async () => {
      entry = ((await env.api("GET", "/v1/audit-logs", undefined, k.secret)).json.data ?? []).find((e: any) => e.request_id === rid);
      return entry !== undefined;
    });
    expect(entry.trace_id).toBeUndefined();
    await env.svc.stop(); // a trace pipeline would have exported everything by now
    expect(rx.posts).toHaveLength(0);
  });
});
