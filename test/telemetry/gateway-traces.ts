// The gateway's traces, run once per OTLP protocol (otlp-json.test.ts, otlp-proto.test.ts): a
// keyed chat gives one trace (server span, chat span with the GenAI attributes, upstream client
// span); a fallback shows both attempts; a refused request carries error.type and the limit; an
// incoming traceparent is continued and the upstream gets a child traceparent; a streamed
// attempt's span ends with its stream; the trace id is in
// the audit entry and the access line. Everything on loopback: svc, the stand-in upstreams and
// the OTLP receiver.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { startEnv, standIn, provider, type Env, type StandIn } from "../gateway/fixtures";
import { eventually } from "../helpers/http";
import { otlpReceiver, type GotSpan, type Receiver } from "./otlp-receiver";

const SERVER = 2;
const CLIENT = 3;

export function gatewayTraces(protocol: "http/json" | "http/protobuf"): void {
  let env: Env;
  let a: StandIn;
  let b: StandIn;
  let rx: Receiver;
  const saved = { ...process.env };

  beforeAll(async () => {
    rx = await otlpReceiver();
    Object.assign(process.env, {
      OTEL_EXPORTER_OTLP_ENDPOINT: rx.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
      OTEL_EXPORTER_OTLP_HEADERS: "x-collector-token=abc123",
      OTEL_SERVICE_NAME: "svc-under-test",
      OTEL_BSP_SCHEDULE_DELAY: "20",
    });
    a = await standIn();
    b = await standIn();
    env = await startEnv();
    await env.apply([
      provider("a-main", a, [{ name: "gpt-x", inputPerMillion: 1, outputPerMillion: 2 }, { name: "shaky", upstreamName: "mode:fail500", inputPerMillion: 1, outputPerMillion: 1 }, { name: "broken", upstreamName: "mode:midstream" }]),
      provider("b-backup", b, [{ name: "shaky", inputPerMillion: 5, outputPerMillion: 5 }]),
    ]);
  });
  afterAll(async () => {
    await env?.stop();
    await a?.close();
    await b?.close();
    await rx?.close();
    process.env = saved;
  });

  const traceOf = (id: string) => rx.spans.filter((s) => s.traceId === id);
  const one = (spans: GotSpan[], f: (s: GotSpan) => boolean) => {
    const got = spans.filter(f);
    expect(got, JSON.stringify(spans.map((s) => s.name))).toHaveLength(1);
    return got[0];
  };
  const chat = (key: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    fetch(`${env.url}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers }, body: JSON.stringify(body) });

  describe(`traces over OTLP ${protocol}`, () => {
    it("a keyed chat is one trace: server span, chat span with the GenAI attributes, its upstream client span", async () => {
      const k = await env.key({ organization_id: "org-1", team_id: "team-1" });
      const n = a.requests.length;
      const res = await chat(k.secret, { model: "gpt-x", messages: [{ role: "user", content: "hi" }], max_tokens: 16, temperature: 0.5 });
      expect(res.status).toBe(200);
      await res.json();
      const tp = String(a.requests[n].headers.traceparent ?? "");
      expect(tp).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
      const traceId = tp.split("-")[1];
      await eventually(async () => traceOf(traceId).length >= 3);
      const spans = traceOf(traceId);
      const server = one(spans, (s) => s.kind === SERVER);
      expect(server.name).toBe("POST /v1/chat/completions");
      expect(server.attrs["http.request.method"]).toBe("POST");
      expect(server.attrs["http.route"]).toBe("/v1/chat/completions");
      expect(server.attrs["http.response.status_code"]).toBe(200);
      expect(server.parentSpanId).toBe("");
      expect(server.service).toBe("svc-under-test");
      const c = one(spans, (s) => s.name === "chat gpt-x");
      expect(c.parentSpanId).toBe(server.spanId);
      expect(c.attrs).toMatchObject({
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-x",
        "gen_ai.response.model": "gpt-x",
        "gen_ai.request.max_tokens": 16,
        "gen_ai.request.temperature": 0.5,
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 5,
        "gen_ai.response.finish_reasons": ["stop"],
        "svc.key.id": k.id,
        "svc.organization.id": "org-1",
        "svc.team.id": "team-1",
        "svc.provider": "a-main",
        "svc.policy.decision": "allow",
        "svc.currency": "USD",
      });
      expect(c.attrs["error.type"]).toBeUndefined();
      expect(c.attrs["gen_ai.input.messages"]).toBeUndefined(); // content is off unless configured
      const up = one(spans, (s) => s.kind === CLIENT);
      expect(up.parentSpanId).toBe(c.spanId);
      expect(up.attrs["http.response.status_code"]).toBe(200);
      expect(up.attrs["server.address"]).toBe("127.0.0.1");
      expect(tp.split("-")[2]).toBe(up.spanId); // the upstream's parent is the attempt's span
      // never a secret in any span, and the exporter sent the configured header
      expect(JSON.stringify(rx.spans)).not.toContain(k.secret);
      expect(rx.posts.at(-1)?.headers["x-collector-token"]).toBe("abc123");
      expect(rx.posts.at(-1)?.contentType).toContain(protocol === "http/json" ? "json" : "protobuf");
      // the trace id in the audit entry and the access line
      const rid = res.headers.get("x-request-id");
      await eventually(async () => {
        const r = await env.api("GET", "/v1/audit-logs", undefined, k.secret);
        return (r.json.data ?? []).some((e: any) => e.request_id === rid && e.trace_id === traceId);
      });
      expect(env.svc.logs.some((l) => l.requestId === rid && l.trace_id === traceId)).toBe(true);
    });

    it("a fallback shows both upstream attempts under the chat span", async () => {
      const k = await env.key();
      const n = b.requests.length;
      const res = await chat(k.secret, { model: "shaky", messages: [{ role: "user", content: "hi" }], metadata: { routing: { strategy: "cost-optimized", fallback: true } } });
      expect(res.status).toBe(200);
      const traceId = String(b.requests[n].headers.traceparent).split("-")[1];
      await eventually(async () => traceOf(traceId).length >= 4);
      const spans = traceOf(traceId);
      const c = one(spans, (s) => s.name === "chat shaky");
      expect(c.attrs["svc.fallback"]).toBe(true);
      expect(c.attrs["svc.attempts"]).toBe(2);
      expect(c.attrs["svc.provider"]).toBe("b-backup");
      const attempts = spans.filter((s) => s.kind === CLIENT);
      expect(attempts).toHaveLength(2);
      expect(attempts.every((s) => s.parentSpanId === c.spanId)).toBe(true);
      const failed = one(attempts, (s) => s.attrs["svc.provider"] === "a-main");
      expect(failed.attrs["http.response.status_code"]).toBe(500);
      expect(failed.attrs["error.type"]).toBe("upstream_error");
      expect(failed.status).toBe(2);
      expect(one(attempts, (s) => s.attrs["svc.provider"] === "b-backup").attrs["error.type"]).toBeUndefined();
      // the failed attempt's warn line names the trace
      expect(env.svc.logs.some((l) => l.msg === "upstream request failed" && l.trace_id === traceId && l.provider === "a-main")).toBe(true);
    });

    it("a refused request carries error.type and the limit that refused it", async () => {
      const k = await env.key({ rate_limits: { per_minute: 1 } });
      expect((await chat(k.secret, { model: "gpt-x", messages: [{ role: "user", content: "one" }] })).status).toBe(200);
      const traceId = "4bf92f3577b34da6a3ce929d0e0e4736".slice(0, 24) + "00000000";
      const res = await chat(k.secret, { model: "gpt-x", messages: [{ role: "user", content: "two" }] }, { traceparent: `00-${traceId}-00f067aa0ba902b7-01` });
      expect(res.status).toBe(429);
      await eventually(async () => traceOf(traceId).length >= 2);
      const spans = traceOf(traceId);
      const c = one(spans, (s) => s.name === "chat gpt-x");
      expect(c.attrs["error.type"]).toBe("rate_limit_exceeded");
      expect(c.attrs["svc.limit"]).toBe("per_minute=1");
      expect(c.attrs["svc.key.id"]).toBe(k.id);
      expect(c.status).toBe(2);
      const server = one(spans, (s) => s.kind === SERVER);
      expect(server.attrs["http.response.status_code"]).toBe(429);
      expect(server.attrs["error.type"]).toBe("429");
      expect(spans.some((s) => s.kind === CLIENT)).toBe(false); // the upstream never saw it
    });

    it("a streamed attempt's client span ends with its stream, failed when the stream breaks", async () => {
      const k = await env.key();
      const n = a.requests.length;
      const res = await chat(k.secret, { model: "broken", stream: true, messages: [{ role: "user", content: "hi" }] });
      expect(res.status).toBe(200); // the headers (and the first chunks) arrived fine
      await res.text().catch(() => undefined);
      const traceId = String(a.requests[n].headers.traceparent).split("-")[1];
      await eventually(async () => traceOf(traceId).some((s) => s.kind === CLIENT));
      const up = one(traceOf(traceId), (s) => s.kind === CLIENT);
      expect(up.attrs["http.response.status_code"]).toBe(200);
      expect(up.attrs["error.type"]).toBeDefined(); // ended at the break, not at the headers
      expect(up.status).toBe(2);
      // the line logged for the broken stream (written by the HTTP layer, not the provider) names the trace
      expect(env.svc.logs.some((l) => l.msg === "stream failed" && l.trace_id === traceId)).toBe(true);
    });

    it("an incoming traceparent is continued and the upstream receives a child traceparent", async () => {
      const k = await env.key();
      const traceId = "0af7651916cd43dd8448eb211c80319c";
      const parent = "b7ad6b7169203331";
      const n = a.requests.length;
      const res = await chat(k.secret, { model: "gpt-x", messages: [{ role: "user", content: "hi" }] }, { traceparent: `00-${traceId}-${parent}-01`, tracestate: "vendor=x" });
      expect(res.status).toBe(200);
      const tp = String(a.requests[n].headers.traceparent).split("-");
      expect(tp[1]).toBe(traceId);
      expect(tp[2]).not.toBe(parent);
      expect(a.requests[n].headers.tracestate).toBe("vendor=x");
      await eventually(async () => traceOf(traceId).length >= 3);
      const server = one(traceOf(traceId), (s) => s.kind === SERVER);
      expect(server.parentSpanId).toBe(parent);
      expect(one(traceOf(traceId), (s) => s.kind === CLIENT).spanId).toBe(tp[2]);
    });

    it("an embeddings call has its upstream client span, and the upstream receives its traceparent", async () => {
      const k = await env.key();
      const n = a.requests.length;
      const res = await fetch(`${env.url}/v1/embeddings`, { method: "POST", headers: { authorization: `Bearer ${k.secret}`, "content-type": "application/json" }, body: JSON.stringify({ model: "gpt-x", input: ["abc"] }) });
      expect(res.status).toBe(200);
      await res.json();
      const tp = String(a.requests[n].headers.traceparent ?? "");
      expect(tp).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
      const [, traceId, parent] = tp.split("-");
      await eventually(async () => traceOf(traceId).length >= 3);
      const spans = traceOf(traceId);
      const server = one(spans, (s) => s.kind === SERVER);
      const e = one(spans, (s) => s.name === "embeddings gpt-x");
      expect(e.parentSpanId).toBe(server.spanId);
      expect(e.attrs["gen_ai.operation.name"]).toBe("embeddings");
      const client = one(spans, (s) => s.kind === CLIENT);
      expect(client.parentSpanId).toBe(e.spanId);
      expect(client.spanId).toBe(parent);
    });
  });
}
