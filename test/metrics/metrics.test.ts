// GET /metrics after real traffic: chat completions through the official openai SDK against a
// loopback stand-in provider, a limit refusal, a reconcile, a tool call.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError, provider, standIn, startEnv, type Env, type StandIn } from "../gateway/fixtures";
import { find, parse, value, type Sample } from "./scrape";

let env: Env;
let up: StandIn;

const msg = () => [{ role: "user" as const, content: "hello" }];

async function scrape(): Promise<{ status: number; type: string | null; text: string; samples: Sample[] }> {
  const r = await fetch(`${env.url}/metrics`);
  const text = await r.text();
  return { status: r.status, type: r.headers.get("content-type"), text, samples: r.status === 200 ? parse(text) : [] };
}

beforeAll(async () => {
  // usage from the stand-in: 10 prompt and 5 completion tokens per answer
  up = await standIn({ promptTokens: 10, completionTokens: 5 });
  env = await startEnv();
  // $1000 per million input tokens, $2000 per million output: 0.01 + 0.01 USD per answer
  await env.apply([provider("up", up, [{ name: "gpt-m", inputPerMillion: 1000, outputPerMillion: 2000 }])]);
});
afterAll(async () => {
  await env?.stop();
  await up?.close();
});

describe("GET /metrics", () => {
  it("serves the Prometheus text format with the process metrics once", async () => {
    const s = await scrape();
    expect(s.status).toBe(200);
    expect(s.type).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(s.text).toContain("# TYPE svc_http_requests_total counter");
    expect(s.text).toContain("# TYPE svc_gateway_request_duration_seconds histogram");
    expect(s.text.match(/^# TYPE process_cpu_user_seconds_total /gm)).toHaveLength(1);
    expect(s.text.match(/^# TYPE svc_http_requests_total /gm)).toHaveLength(1);
    for (const status of ["queued", "running", "input_required"]) expect(value(s.samples, "svc_agent_tasks", { status })).toBe(0);
    expect(value(s.samples, "svc_inference_models_loaded", {})).toBe(0);
  });

  it("counts requests, durations, tokens and spend by route, model and provider", async () => {
    const key = await env.key({ name: "metrics" });
    const c = env.client(key.secret);
    await c.chat.completions.create({ model: "gpt-m", messages: msg() });
    await c.chat.completions.create({ model: "gpt-m", messages: msg() });
    const stream = await c.chat.completions.create({ model: "gpt-m", messages: msg(), stream: true, stream_options: { include_usage: true } });
    for await (const _ of stream);
    await expectError(c.chat.completions.create({ model: "no-such-model", messages: msg() }), 404, "model_not_found");

    const { samples } = await scrape();
    const route = "/v1/chat/completions";
    expect(value(samples, "svc_http_requests_total", { route, status_class: "2xx", protocol: "openai" })).toBe(3);
    expect(value(samples, "svc_http_requests_total", { route, status_class: "4xx", protocol: "openai" })).toBe(1);
    // the key route and the metrics route are counted under their patterns
    expect(value(samples, "svc_http_requests_total", { route: "/v1/api-keys", status_class: "2xx", protocol: "gateway" })).toBe(1);

    const labels = { route, model: "gpt-m", provider: "up" };
    expect(value(samples, "svc_gateway_request_duration_seconds_count", labels)).toBe(3);
    expect(value(samples, "svc_gateway_request_duration_seconds_bucket", { ...labels, le: "+Inf" })).toBe(3);
    const buckets = find(samples, "svc_gateway_request_duration_seconds_bucket", labels);
    expect(buckets.length).toBeGreaterThan(10);
    const counts = buckets.map((b) => b.value);
    expect(counts).toEqual([...counts].sort((a, b) => a - b)); // cumulative
    expect(value(samples, "svc_gateway_request_duration_seconds_bucket", { ...labels, le: "300" })).toBe(3);
    expect(value(samples, "svc_gateway_request_duration_seconds_sum", labels)).toBeGreaterThan(0);
    // a request no provider served has no model/provider series
    expect(find(samples, "svc_gateway_request_duration_seconds_count", { model: "no-such-model" })).toHaveLength(0);

    expect(value(samples, "svc_gateway_tokens_total", { direction: "input", model: "gpt-m", provider: "up" })).toBe(30);
    expect(value(samples, "svc_gateway_tokens_total", { direction: "output", model: "gpt-m", provider: "up" })).toBe(15);
    expect(value(samples, "svc_gateway_spend_usd_total", { provider: "up", model: "gpt-m" })).toBeCloseTo(0.06, 9);
  });

  it("counts a limit refusal under its kind", async () => {
    const key = await env.key({ name: "limited", rate_limits: { per_minute: 1 } });
    const c = env.client(key.secret);
    const before = value((await scrape()).samples, "svc_gateway_limit_refusals_total", { kind: "per_minute", code: "rate_limit_exceeded" }) ?? 0;
    const http4xx = { route: "/v1/chat/completions", status_class: "4xx", protocol: "openai" };
    const before4xx = value((await scrape()).samples, "svc_http_requests_total", http4xx) ?? 0;
    await c.chat.completions.create({ model: "gpt-m", messages: msg() });
    await expectError(c.chat.completions.create({ model: "gpt-m", messages: msg() }), 429, "rate_limit_exceeded");
    await expectError(c.chat.completions.create({ model: "gpt-m", messages: msg() }), 429, "rate_limit_exceeded");

    const { samples } = await scrape();
    expect(value(samples, "svc_gateway_limit_refusals_total", { kind: "per_minute", code: "rate_limit_exceeded" })).toBe(before + 2);
    expect(value(samples, "svc_http_requests_total", http4xx)).toBe(before4xx + 2);
  });

  it("counts a daily budget refusal as budget_daily", async () => {
    // a request is admitted while the day's spend is under the budget: the first answer
    // (0.02 USD) spends it all, the next is refused
    const key = await env.key({ name: "tight", budget_limits: { daily: 0.01 } });
    const c = env.client(key.secret);
    await c.chat.completions.create({ model: "gpt-m", messages: msg() });
    await expectError(c.chat.completions.create({ model: "gpt-m", messages: msg() }), 402, "budget_exceeded");
    const { samples } = await scrape();
    expect(value(samples, "svc_gateway_limit_refusals_total", { kind: "budget_daily", code: "budget_exceeded" })).toBe(1);
  });

  it("shows reconcile results by kind", async () => {
    let v: number | undefined;
    for (let i = 0; i < 200 && !v; i++) {
      v = value((await scrape()).samples, "svc_reconcile_total", { kind: "Provider", result: "success" });
      if (!v) await new Promise((r) => setTimeout(r, 25));
    }
    expect(v).toBeGreaterThanOrEqual(1);
  });

  it("counts tool calls by service and outcome", async () => {
    const r = await fetch(`${env.url}/mcp/call`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "svc_time", arguments: {} }) });
    expect(r.status).toBe(200);
    const { samples } = await scrape();
    expect(value(samples, "svc_mcp_tool_calls_total", { service: "builtin", outcome: "success" })).toBe(1);
  });
});

describe("two svc in one process", () => {
  it("keep their own registries: a second svc starts from zero and both scrape", async () => {
    const other = await startEnv();
    try {
      const r = await fetch(`${other.url}/metrics`);
      expect(r.status).toBe(200);
      const samples = parse(await r.text());
      expect(find(samples, "svc_gateway_tokens_total")).toHaveLength(0);
      expect(find(samples, "svc_http_requests_total", { route: "/v1/chat/completions" })).toHaveLength(0);
      expect(find(samples, "process_cpu_user_seconds_total")).toHaveLength(1);
      // the first svc still has its counts
      expect(value((await scrape()).samples, "svc_gateway_tokens_total", { direction: "input", model: "gpt-m", provider: "up" })).toBeGreaterThanOrEqual(30);
    } finally {
      await other.stop();
    }
  });
});
