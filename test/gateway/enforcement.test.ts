// The spec's Errors table, row by row, through the official openai client: authorization
// failures (permissions, policy, IP allowlist), budget and quota (402), rate limiting and burst
// (429 with Retry-After), budget exhausted daily / monthly, team and organization roll-up.
import { Cancellation } from "../../engines/chat/cancel";
import { describe, it, expect, afterAll, beforeAll } from "vitest";
import { httpView } from "../helpers/errors";
import { startEnv, standIn, provider, expectError, type Env, type StandIn } from "./fixtures";
import type { Caller } from "../../engines/gateway/pipeline-types";
import type { ChatRequest } from "../../engines/chat/types";
import { pinToMiddayUtc } from "../helpers/clock";

// "today's" usage is compared across steps: a clock that cannot cross a UTC midnight in this file
afterAll(pinToMiddayUtc());

let env: Env;
let up: StandIn;
const msg = (content = "hi") => [{ role: "user" as const, content }];

// usage from the stand-in: 10 prompt + 5 completion tokens per request
// gpt-x: $1 / M in, $2 / M out  -> 20 micro-USD a request
// pricey: $100,000 / M in and out -> 1.5 USD a request (15 tokens)
beforeAll(async () => {
  up = await standIn();
  env = await startEnv();
  await env.apply([
    provider("up", up, [
      { name: "gpt-x", inputPerMillion: 1, outputPerMillion: 2 },
      { name: "gpt-y", inputPerMillion: 1, outputPerMillion: 2 },
      { name: "pricey", inputPerMillion: 100_000, outputPerMillion: 100_000 },
      { name: "free-for-all" }, // no price
    ]),
    provider("other", up, [{ name: "gpt-x", inputPerMillion: 3, outputPerMillion: 3 }]),
  ]);
});
afterAll(async () => {
  await env?.stop();
  await up?.close();
});

async function pipelineAs(secret: string, ip: string, model = "gpt-x") {
  const caller: Caller = { token: secret, ip, loopback: false, requestId: "req-test", route: "/v1/chat/completions" };
  const req: ChatRequest = { model, messages: msg(), sampling: {}, stream: false };
  const s = await env.gw.pipeline.chat(caller, req, new Cancellation());
  for await (const _ of s.events);
  return s;
}

describe("authorization failures -> 403", () => {
  it("insufficient permissions: model outside permissions.models -> 403 permission_denied", async () => {
    const k = await env.key({ permissions: { models: ["gpt-x"] } });
    const c = env.client(k.secret);
    await c.chat.completions.create({ model: "gpt-x", messages: msg() });
    const e = await expectError(c.chat.completions.create({ model: "gpt-y", messages: msg() }), 403, "permission_denied");
    expect(e.message).toContain("gpt-y");
    // action outside permissions.actions
    const k2 = await env.key({ permissions: { actions: ["chat:completions"] } });
    await expectError(env.client(k2.secret).chat.completions.create({ model: "gpt-x", messages: msg(), stream: true }), 403, "permission_denied");
  });

  it("model not allowed by the policy: explicit Deny beats Allow -> 403 policy_denied naming the statement", async () => {
    const k = await env.key({
      policy: {
        version: "2024-01-01",
        statements: [
          { effect: "Allow", actions: ["*"], resources: ["*"] },
          { effect: "Deny", actions: ["chat:completions", "chat:stream"], resources: ["model:gpt-y"] },
        ],
      },
    });
    const c = env.client(k.secret);
    await c.chat.completions.create({ model: "gpt-x", messages: msg() });
    const e = await expectError(c.chat.completions.create({ model: "gpt-y", messages: msg() }), 403, "policy_denied");
    expect(e.message).toContain("statement #2");
    expect(e.message).toContain("gpt-y");
  });

  it("statements exist and none allows -> 403 policy_denied; streaming is its own action", async () => {
    await env.apply([
      { kind: "AccessPolicy", name: "no-stream", spec: { version: "2024-01-01", statements: [{ effect: "Allow", actions: ["chat:completions"], resources: ["model:gpt-*"] }] } },
    ]);
    const k = await env.key({ policies: ["no-stream"] });
    const c = env.client(k.secret);
    await c.chat.completions.create({ model: "gpt-x", messages: msg() });
    const e = await expectError(c.chat.completions.create({ model: "gpt-x", messages: msg(), stream: true }), 403, "policy_denied");
    expect(e.message).toContain("chat:stream");
    await expectError(c.chat.completions.create({ model: "pricey", messages: msg() }), 403, "policy_denied");
  });

  it("provider resources and not_in route around a denied provider", async () => {
    const k = await env.key({
      policy: { version: "2024-01-01", statements: [{ effect: "Allow", actions: ["*"], resources: ["provider:*"], condition: { not_in: ["up"] } }] },
    });
    const s = await pipelineAs(k.secret, "127.0.0.1");
    expect(s.provider).toBe("other"); // "up" comes first by name but the policy excludes it
    const k2 = await env.key({ policy: { version: "2024-01-01", statements: [{ effect: "Deny", actions: ["*"], resources: ["provider:up", "provider:other"] }] } });
    await expectError(env.client(k2.secret).chat.completions.create({ model: "gpt-x", messages: msg() }), 403, "policy_denied");
  });

  it("monthly_budget_over / under conditions see the key's month-to-date spend", async () => {
    const k = await env.key({
      policy: {
        version: "2024-01-01",
        statements: [
          { effect: "Allow", actions: ["*"], resources: ["*"] },
          { effect: "Deny", actions: ["*"], resources: ["model:pricey"], condition: { monthly_budget_over: 1 } },
        ],
      },
    });
    const c = env.client(k.secret);
    await c.chat.completions.create({ model: "pricey", messages: msg() }); // spends 1.5 USD
    await expectError(c.chat.completions.create({ model: "pricey", messages: msg() }), 403, "policy_denied");
    await c.chat.completions.create({ model: "gpt-x", messages: msg() });
  });

  it("IP allowlist, IPv4 and IPv6 CIDR -> 403 ip_not_allowed", async () => {
    const v4 = await env.key({ ip_allowlist: { enabled: true, addresses: ["10.0.0.0/8"] } });
    const e = await expectError(env.client(v4.secret).chat.completions.create({ model: "gpt-x", messages: msg() }), 403, "ip_not_allowed");
    expect(e.message).toContain("127.0.0.1");
    await pipelineAs(v4.secret, "10.20.30.40");
    await expect(pipelineAs(v4.secret, "11.0.0.1").catch(httpView)).resolves.toMatchObject({ status: 403, code: "ip_not_allowed" });

    const local = await env.key({ ip_allowlist: { enabled: true, addresses: ["127.0.0.1/32"] } });
    await env.client(local.secret).chat.completions.create({ model: "gpt-x", messages: msg() });

    const v6 = await env.key({ ip_allowlist: { enabled: true, addresses: ["2001:db8::/32", "192.168.1.7"] } });
    await pipelineAs(v6.secret, "2001:db8:1::5");
    await pipelineAs(v6.secret, "192.168.1.7");
    await pipelineAs(v6.secret, "::ffff:192.168.1.7"); // v4-mapped v6 matches the v4 entry
    await expect(pipelineAs(v6.secret, "2001:db9::1").catch(httpView)).resolves.toMatchObject({ status: 403, code: "ip_not_allowed" });
    await expect(pipelineAs(v6.secret, "192.168.1.8").catch(httpView)).resolves.toMatchObject({ status: 403, code: "ip_not_allowed" });
    await expectError(env.client(v6.secret).chat.completions.create({ model: "gpt-x", messages: msg() }), 403, "ip_not_allowed");

    // disabled allowlist: no restriction
    const off = await env.key({ ip_allowlist: { enabled: false, addresses: ["10.0.0.0/8"] } });
    await env.client(off.secret).chat.completions.create({ model: "gpt-x", messages: msg() });
  });

  it("a budgeted key may not use a model without a price", async () => {
    const k = await env.key({ budget_limits: { daily: 5 } });
    const e = await expectError(env.client(k.secret).chat.completions.create({ model: "free-for-all", messages: msg() }), 403, "permission_denied");
    expect(e.message).toContain("no price");
    const unbudgeted = await env.key();
    await env.client(unbudgeted.secret).chat.completions.create({ model: "free-for-all", messages: msg() });
  });

  it("an unknown model -> 404 model_not_found", async () => {
    const k = await env.key();
    const e = await expectError(env.client(k.secret).chat.completions.create({ model: "nope", messages: msg() }), 404, "model_not_found");
    expect(e.message).toContain("nope");
  });
});

describe("models and embeddings", () => {
  it("/v1/models lists only what the key may use", async () => {
    const k = await env.key({ permissions: { models: ["gpt-*"] } });
    const ids = [];
    for await (const m of env.client(k.secret).models.list()) ids.push(m.id);
    expect(ids.sort()).toEqual(["gpt-x", "gpt-y"]);
    const all = [];
    for await (const m of env.client(env.adminKey).models.list()) all.push(m.id);
    expect(all).toEqual(expect.arrayContaining(["gpt-x", "gpt-y", "pricey", "free-for-all"]));
  });

  it("embeddings go through the same checks and count usage", async () => {
    const k = await env.key({ permissions: { models: ["gpt-x"] }, budget_limits: { daily: 1 } });
    const c = env.client(k.secret);
    const r = await c.embeddings.create({ model: "gpt-x", input: ["abc", "de"] });
    expect(r.data.map((d) => d.embedding[0])).toEqual([3, 2]);
    await expectError(c.embeddings.create({ model: "gpt-y", input: "x" }), 403, "permission_denied");
    const one = await env.api("GET", `/v1/api-keys/${k.id}`);
    expect(one.json.usage.today.tokens).toBe(6);
    const page = await env.gw.audit.query({ keyIds: [k.id] });
    expect(page.data.map((d) => `${d.action} ${d.status}`)).toEqual(["embeddings permission_denied", "embeddings success"]);
  });
});

describe("rate limiting -> 429", () => {
  it("too many requests: per_minute with Retry-After and x-ratelimit-* headers", async () => {
    const k = await env.key({ rate_limits: { per_minute: 3 } });
    const c = env.client(k.secret);
    const first = await c.chat.completions.create({ model: "gpt-x", messages: msg() }).withResponse();
    expect(first.response.headers.get("x-ratelimit-limit-requests")).toBe("3");
    expect(first.response.headers.get("x-ratelimit-remaining-requests")).toBe("2");
    expect(first.response.headers.get("x-ratelimit-reset-requests")).toMatch(/^\d+s$/);
    await c.chat.completions.create({ model: "gpt-x", messages: msg() });
    await c.chat.completions.create({ model: "gpt-x", messages: msg() });
    const e = await expectError(c.chat.completions.create({ model: "gpt-x", messages: msg() }), 429, "rate_limit_exceeded");
    expect(e.message).toContain("per_minute=3");
    expect(e.message).not.toContain(k.secret);
    const retry = Number(e.headers.get("retry-after"));
    // one request frees every 20 s at 3/minute
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(20);
    expect(e.headers.get("x-ratelimit-remaining-requests")).toBe("0");
    expect(e.headers.get("x-ratelimit-limit-requests")).toBe("3");
  });

  it("burst limit exceeded: burst smaller than per_minute", async () => {
    const k = await env.key({ rate_limits: { per_minute: 60, burst: 2 } });
    const c = env.client(k.secret);
    const results = await Promise.allSettled(Array.from({ length: 6 }, () => c.chat.completions.create({ model: "gpt-x", messages: msg() })));
    const limited = results.filter((r) => r.status === "rejected");
    // 2 from the burst (plus one a second refilled while the six arrive)
    expect(limited.length).toBeGreaterThanOrEqual(2);
    const e: any = (limited[0] as PromiseRejectedResult).reason;
    expect(e.status).toBe(429);
    expect(e.message).toContain("burst=2");
    expect(Number(e.headers.get("retry-after"))).toBe(1);
  });

  it("per_hour sliding window", async () => {
    const k = await env.key({ rate_limits: { per_hour: 2 } });
    const c = env.client(k.secret);
    await c.chat.completions.create({ model: "gpt-x", messages: msg() });
    await c.chat.completions.create({ model: "gpt-x", messages: msg() });
    const e = await expectError(c.chat.completions.create({ model: "gpt-x", messages: msg() }), 429, "rate_limit_exceeded");
    expect(e.message).toContain("per_hour=2");
    expect(Number(e.headers.get("retry-after"))).toBeGreaterThan(3500);
  });

  it("user shorthand permissions.rate_limit_per_minute", async () => {
    const k = await env.key({ permissions: { rate_limit_per_minute: 1 } });
    const c = env.client(k.secret);
    await c.chat.completions.create({ model: "gpt-x", messages: msg() });
    await expectError(c.chat.completions.create({ model: "gpt-x", messages: msg() }), 429, "rate_limit_exceeded");
  });
});

describe("budget or quota exceeded -> 402", () => {
  it("token limit per_request_max -> 402 quota_exceeded (prompt estimate + max_tokens)", async () => {
    const k = await env.key({ token_limits: { per_request_max: 100 } });
    const c = env.client(k.secret);
    await c.chat.completions.create({ model: "gpt-x", messages: msg(), max_tokens: 50 });
    const e = await expectError(c.chat.completions.create({ model: "gpt-x", messages: msg(), max_tokens: 200 }), 402, "quota_exceeded");
    expect(e.message).toContain("per_request_max=100");
    await expectError(c.chat.completions.create({ model: "gpt-x", messages: msg("x".repeat(1000)) }), 402, "quota_exceeded");
    // without max_tokens the upstream gets a cap that keeps the request within the limit
    const n = up.requests.length;
    await c.chat.completions.create({ model: "gpt-x", messages: msg() });
    expect(up.requests[n].body.max_tokens).toBeLessThanOrEqual(100);
  });

  it("token limit daily -> 402 quota_exceeded", async () => {
    const k = await env.key({ token_limits: { daily: 30 } });
    const c = env.client(k.secret);
    await c.chat.completions.create({ model: "gpt-x", messages: msg(), max_tokens: 5 }); // 15 tokens
    await c.chat.completions.create({ model: "gpt-x", messages: msg(), max_tokens: 5 }); // 30
    const e = await expectError(c.chat.completions.create({ model: "gpt-x", messages: msg(), max_tokens: 5 }), 402, "quota_exceeded");
    expect(e.message).toContain("daily=30");
  });

  it("budget exhausted: the daily budget has been reached -> 402 budget_exceeded", async () => {
    const k = await env.key({ budget_limits: { daily: 3 } });
    const c = env.client(k.secret);
    await c.chat.completions.create({ model: "pricey", messages: msg(), max_tokens: 5 }); // 1.5
    await c.chat.completions.create({ model: "pricey", messages: msg(), max_tokens: 5 }); // 3.0
    const e = await expectError(c.chat.completions.create({ model: "pricey", messages: msg(), max_tokens: 5 }), 402, "budget_exceeded");
    expect(e.message).toContain("daily=3.00 USD");
    // cheap models are refused too: the budget is spent
    await expectError(c.chat.completions.create({ model: "gpt-x", messages: msg() }), 402, "budget_exceeded");
    const one = await env.api("GET", `/v1/api-keys/${k.id}`);
    expect(one.json.usage.today.spend_usd).toBeCloseTo(3, 6);
  });

  it("budget exhausted: the monthly budget has been reached -> 402 budget_exceeded", async () => {
    const k = await env.key({ budget_limits: { monthly: 1 } });
    const c = env.client(k.secret);
    await c.chat.completions.create({ model: "pricey", messages: msg(), max_tokens: 5 });
    const e = await expectError(c.chat.completions.create({ model: "pricey", messages: msg(), max_tokens: 5 }), 402, "budget_exceeded");
    expect(e.message).toContain("monthly=1.00 USD");
  });

  it("total budget and PATCH raising it in place", async () => {
    const k = await env.key({ budget_limits: { total: 1.5 } });
    const c = env.client(k.secret);
    await c.chat.completions.create({ model: "pricey", messages: msg(), max_tokens: 5 });
    await expectError(c.chat.completions.create({ model: "pricey", messages: msg(), max_tokens: 5 }), 402, "budget_exceeded");
    expect((await env.api("PATCH", `/v1/api-keys/${k.id}`, { budget_limits: { total: 3 } })).status).toBe(200);
    await c.chat.completions.create({ model: "pricey", messages: msg(), max_tokens: 5 });
    await expectError(c.chat.completions.create({ model: "pricey", messages: msg(), max_tokens: 5 }), 402, "budget_exceeded");
  });
});

describe("team and organization roll-up", () => {
  it("spend of user keys counts toward their team's and organization's budgets", async () => {
    await env.key({ key_type: "organization", organization_id: "org-r", budget_limits: { daily: 4 } });
    await env.key({ key_type: "team", organization_id: "org-r", team_id: "t-a", permissions: { monthly_budget: 2 } });
    const u1 = await env.key({ key_type: "user", organization_id: "org-r", team_id: "t-a", user_id: "alice" });
    const u2 = await env.key({ key_type: "user", organization_id: "org-r", team_id: "t-a", user_id: "bob" });
    const u3 = await env.key({ key_type: "user", organization_id: "org-r", team_id: "t-b", user_id: "carol" });
    const ask = (s: string) => env.client(s).chat.completions.create({ model: "pricey", messages: msg(), max_tokens: 5 });
    await ask(u1.secret); // team 1.5, org 1.5
    await ask(u2.secret); // team 3.0 >= 2: team exhausted
    const e = await expectError(ask(u1.secret), 402, "budget_exceeded");
    expect(e.message).toContain("team key");
    await ask(u3.secret); // other team: org 4.5 >= 4
    const e2 = await expectError(ask(u3.secret), 402, "budget_exceeded");
    expect(e2.message).toContain("organization key");
  });
});
