// Providers and routing: by model name, cost-optimized with fallback, streaming passthrough with
// usage counted, upstream errors mapped to clear gateway errors, timeouts, credentials by
// reference, the Anthropic upstream type, and the audit entry of each request.
import { describe, it, expect, afterAll, beforeAll } from "vitest";
import { startEnv, standIn, provider, expectError, type Env, type StandIn } from "./fixtures";
import { until } from "../helpers/http";
import { DEAD_PORT } from "../helpers/services";
import { pinToMiddayUtc } from "../helpers/clock";

// "today's" usage is compared across steps: a clock that cannot cross a UTC midnight in this file
afterAll(pinToMiddayUtc());

let env: Env;
let a: StandIn;
let b: StandIn;
const msg = (content = "hi") => [{ role: "user" as const, content }];

beforeAll(async () => {
  a = await standIn();
  b = await standIn();
  process.env.STANDIN_CREDENTIAL = "upstream-secret-123";
  env = await startEnv();
  await env.apply([
    // "a-dear" sorts first; "b-cheap" is cheaper
    provider("a-dear", a, [{ name: "shared", inputPerMillion: 5, outputPerMillion: 5 }, { name: "gpt-x", inputPerMillion: 1, outputPerMillion: 2 }], {
      credential: "env:STANDIN_CREDENTIAL",
    }),
    provider("b-cheap", b, [{ name: "shared", inputPerMillion: 1, outputPerMillion: 1 }]),
    provider("broken", a, [
      { name: "err500", upstreamName: "mode:fail500" },
      { name: "err401", upstreamName: "mode:fail401" },
      { name: "err400", upstreamName: "mode:fail400" },
      { name: "err429", upstreamName: "mode:rate429" },
      { name: "hang", upstreamName: "mode:hang" },
      { name: "midstream", upstreamName: "mode:midstream" },
    ], { timeoutSeconds: 1 }),
    provider("patient", a, [{ name: "hang-long", upstreamName: "mode:hang" }], { timeoutSeconds: 60 }),
    { kind: "Provider", name: "dead", spec: { type: "openai", baseUrl: `http://127.0.0.1:${DEAD_PORT}/v1`, models: [{ name: "dead-model" }, { name: "shared2", inputPerMillion: 1, outputPerMillion: 1 }] } },
    provider("z-backup", a, [{ name: "shared2", inputPerMillion: 9, outputPerMillion: 9 }, { name: "renamed", upstreamName: "upstream-name" }]),
    { kind: "Provider", name: "needs-cred", spec: { type: "openai", baseUrl: a.baseUrl, credential: "env:SVC_TEST_UNSET_VARIABLE", models: [{ name: "cred-model" }] } },
    { kind: "Provider", name: "claude", spec: { type: "anthropic", baseUrl: `http://127.0.0.1:${a.port}`, credential: "env:STANDIN_CREDENTIAL", models: [{ name: "claude-x", upstreamName: "claude-3-test", inputPerMillion: 3, outputPerMillion: 15 }] } },
  ]);
});
afterAll(async () => {
  await env?.stop();
  await a?.close();
  await b?.close();
});

describe("routing", () => {
  it("routes by model name and sends the provider's credential from its env: reference", async () => {
    const k = await env.key();
    const n = a.requests.length;
    await env.client(k.secret).chat.completions.create({ model: "gpt-x", messages: msg() });
    const got = a.requests[n];
    expect(got.body.model).toBe("gpt-x");
    expect(got.headers.authorization).toBe("Bearer upstream-secret-123");
    expect(got.headers.authorization).not.toContain(k.secret);
  });

  it("a changed credential variable applies to the very next request", async () => {
    const k = await env.key();
    const c = env.client(k.secret);
    const n = a.requests.length;
    try {
      process.env.STANDIN_CREDENTIAL = "rotated-secret-456";
      await c.chat.completions.create({ model: "gpt-x", messages: msg() });
      process.env.STANDIN_CREDENTIAL = "upstream-secret-123";
      await c.chat.completions.create({ model: "gpt-x", messages: msg() });
    } finally {
      process.env.STANDIN_CREDENTIAL = "upstream-secret-123";
    }
    expect(a.requests.slice(n).map((r) => r.headers.authorization)).toEqual(["Bearer rotated-secret-456", "Bearer upstream-secret-123"]);
  });

  it("default order is by provider name; cost-optimized picks the cheapest", async () => {
    const k = await env.key();
    const c = env.client(k.secret);
    const [na, nb] = [a.requests.length, b.requests.length];
    await c.chat.completions.create({ model: "shared", messages: msg() });
    expect([a.requests.length - na, b.requests.length - nb]).toEqual([1, 0]);
    await c.chat.completions.create({ model: "shared", messages: msg(), metadata: { routing: { strategy: "cost-optimized" } } as any });
    expect([a.requests.length - na, b.requests.length - nb]).toEqual([1, 1]);
  });

  it("fallback: true tries the next provider when the cheapest fails; without it the error shows", async () => {
    const k = await env.key();
    const c = env.client(k.secret);
    b.setMode("fail500");
    try {
      const na = a.requests.length;
      const r = await c.chat.completions.create({ model: "shared", messages: msg(), metadata: { routing: { strategy: "cost-optimized", fallback: true } } as any });
      expect(r.choices[0].message.content).toBe("echo: hi");
      expect(a.requests.length).toBe(na + 1); // served by a-dear after b-cheap failed
      const e = await expectError(c.chat.completions.create({ model: "shared", messages: msg(), metadata: { routing: { strategy: "cost-optimized" } } as any }), 502, "upstream_error");
      expect(e.message).toContain("b-cheap");
      // streaming falls back too (nothing was sent yet)
      const s = await c.chat.completions.create({ model: "shared", messages: msg(), stream: true, metadata: { routing: { strategy: "cost-optimized", fallback: true } } as any });
      let text = "";
      for await (const ch of s) text += ch.choices[0]?.delta?.content ?? "";
      expect(text).toBe("echo: hi");
    } finally {
      b.setMode("ok");
    }
    // connection refused falls back as well
    const r2 = await c.chat.completions.create({ model: "shared2", messages: msg(), metadata: { routing: { strategy: "cost-optimized", fallback: true } } as any });
    expect(r2.choices[0].message.content).toBe("echo: hi");
    // the audit entry names the provider that served
    const page = await env.gw.audit.query({ keyIds: [k.id] });
    expect(page.data[0].provider).toBe("z-backup");
  });
});

describe("the answer's body", () => {
  // the stand-in answers non-streaming chat with JSON.stringify of this shape (fixtures.ts)
  const upstreamBody = (model: string, text: string) =>
    JSON.stringify({ id: "chatcmpl-standin", object: "chat.completion", created: 1, model, choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } });
  const post = async (secret: string, model: string) => {
    const r = await fetch(`${env.url}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" }, body: JSON.stringify({ model, messages: msg("pass me") }) });
    return { status: r.status, headers: r.headers, text: await r.text() };
  };

  it("is the upstream's bytes when it names the served model, still counted and audited, with svc's headers", async () => {
    const k = await env.key({ budget_limits: { daily: 1 } });
    const r = await post(k.secret, "gpt-x");
    expect(r.status).toBe(200);
    expect(r.text).toBe(upstreamBody("gpt-x", "echo: pass me"));
    expect(r.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(r.headers.get("x-request-id")).toBeTruthy();
    expect(r.headers.get("x-ratelimit-limit-requests")).toBeNull(); // a budget, no rate limit
    const one = await env.api("GET", `/v1/api-keys/${k.id}`);
    expect(one.json.usage.today.tokens).toBe(15);
    const entry = (await env.gw.audit.query({ keyIds: [k.id] })).data[0];
    expect(entry).toMatchObject({ action: "chat.completions", model: "gpt-x", status: "success", tokens: { prompt: 10, completion: 5, total: 15 } });
  });

  it("is svc's own when the upstream names another model (an alias): id, created and model rewritten", async () => {
    const k = await env.key();
    const r = await post(k.secret, "renamed");
    expect(r.status).toBe(200);
    const j = JSON.parse(r.text);
    expect(a.requests.at(-1)!.body.model).toBe("upstream-name");
    expect(j.model).toBe("renamed");
    expect(j.id).toMatch(/^chatcmpl-/);
    expect(j.id).not.toBe("chatcmpl-standin");
    expect(j.created).toBeGreaterThan(1);
    expect(j.choices[0]).toEqual({ index: 0, message: { role: "assistant", content: "echo: pass me", refusal: null }, logprobs: null, finish_reason: "stop" });
    expect(j.usage).toEqual({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 });
  });
});

describe("streaming", () => {
  it("passes SSE through and counts usage (tokens and cost) from the upstream's usage chunk", async () => {
    const k = await env.key({ budget_limits: { daily: 1 } });
    const n = a.requests.length;
    const s = await env.client(k.secret).chat.completions.create({
      model: "gpt-x",
      messages: msg("stream me please"),
      stream: true,
      stream_options: { include_usage: true },
      metadata: { workflow_id: "wf-7", user_id: "u-42" },
    });
    const parts: string[] = [];
    let usage: any;
    for await (const ch of s) {
      if (ch.choices[0]?.delta?.content) parts.push(ch.choices[0].delta.content);
      if (ch.usage) usage = ch.usage;
    }
    expect(parts.length).toBeGreaterThan(1);
    expect(parts.join("")).toBe("echo: stream me please");
    expect(usage).toMatchObject({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 });
    expect(a.requests[n].body.stream).toBe(true);
    expect(a.requests[n].body.stream_options).toEqual({ include_usage: true });

    const one = await env.api("GET", `/v1/api-keys/${k.id}`);
    expect(one.json.usage.today.tokens).toBe(15);
    expect(one.json.usage.today.spend_usd).toBeCloseTo(0.00002, 9); // 10 * $1/M + 5 * $2/M
    const page = await env.gw.audit.query({ keyIds: [k.id] });
    const entry = page.data[0];
    expect(entry).toMatchObject({
      api_key_id: k.id,
      api_key_name: "test key",
      action: "chat.stream",
      model: "gpt-x",
      provider: "a-dear",
      status: "success",
      tokens: { prompt: 10, completion: 5, total: 15 },
      ip_address: "127.0.0.1",
    });
    expect(entry.cost_usd).toBeCloseTo(0.00002, 9);
    expect(entry.metadata).toMatchObject({ workflow_id: "wf-7", user_id: "u-42" });
    expect(entry.user_agent).toMatch(/OpenAI/i);
    expect(entry.request_id).toBeTruthy();
  });
});

describe("upstream errors", () => {
  it("map to clear gateway errors", async () => {
    const k = await env.key();
    const c = env.client(k.secret);
    const e500 = await expectError(c.chat.completions.create({ model: "err500", messages: msg() }), 502, "upstream_error");
    expect(e500.message).toContain("provider broken answered 500: upstream exploded");
    const e401 = await expectError(c.chat.completions.create({ model: "err401", messages: msg() }), 502, "upstream_error");
    expect(e401.message).toContain("credential");
    const e400 = await expectError(c.chat.completions.create({ model: "err400", messages: msg() }), 400, "invalid_request");
    expect(e400.message).toContain("max_tokens is too large");
    const e429 = await expectError(c.chat.completions.create({ model: "err429", messages: msg() }), 429, "rate_limit_exceeded");
    expect(e429.headers.get("retry-after")).toBe("7");
    expect(e429.message).toContain("provider broken");
    const eTimeout = await expectError(c.chat.completions.create({ model: "hang", messages: msg() }), 504, "upstream_timeout");
    expect(eTimeout.message).toContain("1s");
    const eDead = await expectError(c.chat.completions.create({ model: "dead-model", messages: msg() }), 502, "upstream_error");
    expect(eDead.message).toContain("ECONNREFUSED");
    const eCred = await expectError(c.chat.completions.create({ model: "cred-model", messages: msg() }), 502, "upstream_error");
    expect(eCred.message).toContain("SVC_TEST_UNSET_VARIABLE");
    // failures are audited with their code
    const page = await env.gw.audit.query({ keyIds: [k.id], status: "error" });
    expect(page.data.map((d) => d.status)).toEqual(expect.arrayContaining(["upstream_error", "upstream_timeout", "invalid_request", "rate_limit_exceeded"]));
  });

  it("a client that gives up cancels the upstream request, streaming or not, and it is audited as cancelled", async () => {
    const k = await env.key();
    const c = env.client(k.secret, { maxRetries: 0 });
    for (const stream of [false, true]) {
      const ac = new AbortController();
      const p = c.chat.completions.create({ model: "hang-long", messages: msg(), stream }, { signal: ac.signal });
      await until(() => a.hanging === 1);
      ac.abort();
      await expect(p).rejects.toThrow();
      // svc closes its upstream request long before the provider's 60 s timeout
      await until(() => a.hanging === 0);
    }
    const page = await env.gw.audit.query({ keyIds: [k.id] });
    expect(page.data.map((d) => d.status)).toEqual(["cancelled", "cancelled"]);
  });

  it("a stream that breaks mid-way ends with an error and settles what was used", async () => {
    const k = await env.key();
    const s = await env.client(k.secret).chat.completions.create({ model: "midstream", messages: msg("a b c"), stream: true });
    let text = "";
    await expect(
      (async () => {
        for await (const ch of s) text += ch.choices[0]?.delta?.content ?? "";
      })(),
    ).rejects.toBeTruthy();
    expect(text).toBe("echo: a b c");
    const page = await env.gw.audit.query({ keyIds: [k.id] });
    expect(page.data[0].status).toBe("upstream_error");
    expect(page.data[0].tokens.completion).toBeGreaterThan(0);
  });

  it("a Provider whose credential variable is missing reports CredentialMissing", async () => {
    await until(() => env.svc.svc.store.get("Provider", "needs-cred")?.status.conditions?.[0]?.reason === "CredentialMissing");
    await until(() => env.svc.svc.store.get("Provider", "a-dear")?.status.conditions?.[0]?.status === "True");
    expect(env.svc.svc.store.get("Provider", "a-dear")!.status.conditions![0].message).toBe("2 models");
  });
});

describe("anthropic upstream", () => {
  it("serves OpenAI clients from an Anthropic Messages upstream, streaming and not", async () => {
    const k = await env.key({ budget_limits: { daily: 1 } });
    const c = env.client(k.secret);
    const n = a.requests.length;
    const r = await c.chat.completions.create({ model: "claude-x", messages: [{ role: "system", content: "be brief" }, ...msg("hello")], max_tokens: 64 });
    expect(r.choices[0].message.content).toBe("echo: hello");
    expect(r.usage).toMatchObject({ prompt_tokens: 10, completion_tokens: 5 });
    const got = a.requests[n];
    expect(got.path).toBe("/v1/messages");
    expect(got.headers["x-api-key"]).toBe("upstream-secret-123");
    expect(got.headers["anthropic-version"]).toBe("2023-06-01");
    expect(got.body).toMatchObject({ model: "claude-3-test", max_tokens: 64, system: "be brief" });

    const s = await c.chat.completions.create({ model: "claude-x", messages: msg("streamed"), stream: true, stream_options: { include_usage: true } });
    let text = "";
    let usage: any;
    for await (const ch of s) {
      text += ch.choices[0]?.delta?.content ?? "";
      if (ch.usage) usage = ch.usage;
    }
    expect(text).toBe("echo: streamed");
    expect(usage).toMatchObject({ prompt_tokens: 10, completion_tokens: 5 });
    const one = await env.api("GET", `/v1/api-keys/${k.id}`);
    expect(one.json.usage.today.tokens).toBe(30);
    // 2 x (10 x $3/M + 5 x $15/M) = 2 x 105 micro-USD
    expect(one.json.usage.today.spend_usd).toBeCloseTo(0.00021, 9);
  });
});

describe("attribution", () => {
  it("X-Svc-Agent-Id is recorded in the audit entry and grants nothing", async () => {
    const k = await env.key({ permissions: { models: ["gpt-x"] } });
    const c = env.client(k.secret);
    await c.chat.completions.create({ model: "gpt-x", messages: msg() }, { headers: { "x-svc-agent-id": "researcher" } });
    // the header does not widen the key's permissions
    await expectError(c.chat.completions.create({ model: "shared", messages: msg() }, { headers: { "x-svc-agent-id": "researcher" } }), 403, "permission_denied");
    const page = await env.gw.audit.query({ keyIds: [k.id] });
    const ok = page.data.find((e) => e.status === "success")!;
    expect(ok.metadata).toMatchObject({ agent_id: "researcher" });
  });
});
