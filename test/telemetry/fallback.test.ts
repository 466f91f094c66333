// svc.fallback on the chat span (docs/observability.md, "Spans and attributes": `svc.attempts`,
// `svc.fallback` are "attempts made and `true`, only when a later candidate served"): a fallback
// that every candidate failed shows its attempts and its error, but no svc.fallback, which would
// count it among the calls a fallback saved; one that a later candidate served keeps it.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { startEnv, standIn, provider, type Env, type StandIn } from "../gateway/fixtures";
import { eventually } from "../helpers/http";
import { otlpReceiver, type Receiver } from "./otlp-receiver";

describe("svc.fallback on the chat span", () => {
  let env: Env;
  let a: StandIn;
  let b: StandIn;
  let rx: Receiver;
  const saved = { ...process.env };

  beforeAll(async () => {
    rx = await otlpReceiver();
    Object.assign(process.env, { OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf", OTEL_BSP_SCHEDULE_DELAY: "20" });
    a = await standIn();
    b = await standIn();
    env = await startEnv();
    await env.apply([
      provider("a-main", a, [{ name: "doomed", upstreamName: "mode:fail500", inputPerMillion: 1, outputPerMillion: 1 }, { name: "shaky", upstreamName: "mode:fail500", inputPerMillion: 1, outputPerMillion: 1 }]),
      provider("b-backup", b, [{ name: "doomed", upstreamName: "mode:fail500", inputPerMillion: 5, outputPerMillion: 5 }, { name: "shaky", inputPerMillion: 5, outputPerMillion: 5 }]),
    ]);
  });
  afterAll(async () => {
    await env?.stop();
    await a?.close();
    await b?.close();
    await rx?.close();
    process.env = saved;
  });

  const chat = (key: string, model: string) =>
    fetch(`${env.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }], metadata: { routing: { strategy: "cost-optimized", fallback: true } } }),
    });

  it("a fallback every candidate failed: svc.attempts and the error, no svc.fallback", async () => {
    const k = await env.key();
    const n = b.requests.length;
    const res = await chat(k.secret, "doomed");
    expect(res.status).toBeGreaterThanOrEqual(500);
    await res.text();
    const traceId = String(b.requests[n].headers.traceparent).split("-")[1];
    await eventually(async () => rx.spans.some((s) => s.traceId === traceId && s.name === "chat doomed"));
    const c = rx.spans.find((s) => s.traceId === traceId && s.name === "chat doomed")!;
    expect(c.attrs["svc.attempts"]).toBe(2);
    expect(c.attrs["error.type"]).toBe("upstream_error");
    expect(c.attrs["svc.fallback"]).toBeUndefined(); // no later candidate served
    expect(rx.spans.filter((s) => s.traceId === traceId && s.kind === 3)).toHaveLength(2);
  });

  it("a fallback a later candidate served: svc.attempts and svc.fallback", async () => {
    const k = await env.key();
    const n = b.requests.length;
    const res = await chat(k.secret, "shaky");
    expect(res.status).toBe(200);
    await res.json();
    const traceId = String(b.requests[n].headers.traceparent).split("-")[1];
    await eventually(async () => rx.spans.some((s) => s.traceId === traceId && s.name === "chat shaky"));
    const c = rx.spans.find((s) => s.traceId === traceId && s.name === "chat shaky")!;
    expect(c.attrs["svc.attempts"]).toBe(2);
    expect(c.attrs["svc.fallback"]).toBe(true);
    expect(c.attrs["svc.provider"]).toBe("b-backup");
  });
});
