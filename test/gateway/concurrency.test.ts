// Concurrency: admission is synchronous, so parallel requests see exact counts: 50 parallel
// requests against per_minute=10, burst=10 let exactly 10 through; a temporary key with
// max_requests=5 serves exactly 5 of 20; parallel requests never overspend a budget beyond one
// reservation. Restart keeps spend (stop and start on the same data dir).
import { describe, it, expect, afterAll, beforeAll } from "vitest";
import { startEnv, standIn, provider, expectError, type Env, type StandIn } from "./fixtures";
import { pinToMiddayUtc } from "../helpers/clock";

// "today's" usage is compared across steps: a clock that cannot cross a UTC midnight in this file
afterAll(pinToMiddayUtc());

let env: Env;
let up: StandIn;
let home: string;
const msg = [{ role: "user" as const, content: "hi" }];

// The stand-in reports 2 prompt + 5 completion tokens. "dollar" costs $1 per token (1e6 / M):
// a request with max_tokens 5 reserves (prompt estimate 8 + 5) = $13 and spends $7.
beforeAll(async () => {
  up = await standIn({ promptTokens: 2, completionTokens: 5 });
  env = await startEnv();
  home = env.home;
  await env.apply([provider("up", up, [{ name: "gpt-x", inputPerMillion: 1, outputPerMillion: 1 }, { name: "dollar", inputPerMillion: 1e6, outputPerMillion: 1e6 }])]);
});
afterAll(async () => {
  await env?.stop();
  await up?.close();
});

function tally(results: PromiseSettledResult<unknown>[]) {
  const out: Record<string, number> = {};
  for (const r of results) {
    const k = r.status === "fulfilled" ? "ok" : `${(r.reason as any)?.status} ${(r.reason as any)?.code}`;
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}

describe("concurrency", () => {
  it("50 parallel requests against per_minute=10, burst=10 let exactly 10 through", async () => {
    const k = await env.key({ rate_limits: { per_minute: 10, burst: 10 } });
    const c = env.client(k.secret);
    const results = await Promise.allSettled(Array.from({ length: 50 }, () => c.chat.completions.create({ model: "gpt-x", messages: msg })));
    expect(tally(results)).toEqual({ ok: 10, "429 rate_limit_exceeded": 40 });
    const e: any = results.find((r) => r.status === "rejected")!;
    const retry = Number(e.reason.headers.get("retry-after"));
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(6); // one slot frees every 6 s at 10/minute
  });

  it("the same with streaming requests", async () => {
    const k = await env.key({ rate_limits: { per_minute: 10, burst: 10 } });
    const c = env.client(k.secret);
    const results = await Promise.allSettled(
      Array.from({ length: 50 }, async () => {
        const s = await c.chat.completions.create({ model: "gpt-x", messages: msg, stream: true });
        for await (const _ of s);
      }),
    );
    expect(tally(results)).toEqual({ ok: 10, "429 rate_limit_exceeded": 40 });
  });

  it("a temporary key with max_requests=5 serves exactly 5 of 20 parallel requests", async () => {
    const t = await env.api("POST", "/v1/api-keys/temporary", { expires_in: 600, permissions: { models: ["gpt-x"], max_requests: 5 } });
    expect(t.status).toBe(201);
    const c = env.client(t.json.api_key);
    const results = await Promise.allSettled(Array.from({ length: 20 }, () => c.chat.completions.create({ model: "gpt-x", messages: msg })));
    expect(tally(results)).toEqual({ ok: 5, "402 quota_exceeded": 15 });
  });

  it("parallel requests never overspend a budget beyond one reservation", async () => {
    const budget = 50;
    const reservation = 13; // prompt estimate 8 + max_tokens 5, at $1 a token
    const k = await env.key({ budget_limits: { total: budget } });
    const c = env.client(k.secret);
    let served = 0;
    for (let wave = 0; wave < 10; wave++) {
      const results = await Promise.allSettled(Array.from({ length: 25 }, () => c.chat.completions.create({ model: "dollar", messages: msg, max_tokens: 5 })));
      const t = tally(results);
      served += t.ok ?? 0;
      for (const key of Object.keys(t)) expect(["ok", "402 budget_exceeded"]).toContain(key);
      if (!t.ok) break;
    }
    const one = await env.api("GET", `/v1/api-keys/${k.id}`);
    const spent = one.json.usage.total.spend_usd;
    expect(spent).toBe(served * 7);
    expect(spent).toBeGreaterThanOrEqual(budget); // the budget was used up ...
    expect(spent).toBeLessThan(budget + reservation); // ... and never overspent beyond one reservation
    // $7 a request: the 8th crosses the budget ($56), a 9th ($63) would overspend beyond one
    // reservation; so exactly ceil(50 / 7) = 8 were served, however the waves interleaved
    expect(served).toBe(Math.ceil(budget / 7));
  });

  it("restart keeps spend: stop and start on the same data dir", async () => {
    const k = await env.key({ budget_limits: { daily: 20 } });
    const c = env.client(k.secret);
    await c.chat.completions.create({ model: "dollar", messages: msg, max_tokens: 5 }); // $7
    await c.chat.completions.create({ model: "dollar", messages: msg, max_tokens: 5 }); // $14
    await c.chat.completions.create({ model: "dollar", messages: msg, max_tokens: 5 }); // $21 >= 20
    const before = (await env.api("GET", `/v1/api-keys/${k.id}`)).json.usage;
    expect(before.today.spend_usd).toBe(21);
    await env.stop();

    env = await startEnv({ home });
    const after = (await env.api("GET", `/v1/api-keys/${k.id}`)).json.usage;
    expect(after).toEqual(before);
    const c2 = env.client(k.secret);
    await expect(c2.chat.completions.create({ model: "dollar", messages: msg, max_tokens: 5 })).rejects.toMatchObject({ status: 402, code: "budget_exceeded" });
    // the admin key survives the restart too
    expect((await env.api("GET", "/v1/api-keys")).status).toBe(200);
  });

  it("restart keeps rate windows: a key does not get a fresh allowance by a restart", async () => {
    const minute = await env.key({ rate_limits: { per_minute: 2 } });
    const day = await env.key({ rate_limits: { per_day: 2 } });
    for (const k of [minute, day]) {
      const c = env.client(k.secret);
      for (let i = 0; i < 2; i++) await c.chat.completions.create({ model: "dollar", messages: msg, max_tokens: 5 });
    }
    await env.stop();

    env = await startEnv({ home });
    const m = await expectError(env.client(minute.secret).chat.completions.create({ model: "dollar", messages: msg, max_tokens: 5 }), 429, "rate_limit_exceeded");
    expect(m.message).toContain("per_minute=2");
    const d = await expectError(env.client(day.secret).chat.completions.create({ model: "dollar", messages: msg, max_tokens: 5 }), 429, "rate_limit_exceeded");
    expect(d.message).toContain("per_day=2");
    expect(Number(d.headers.get("retry-after"))).toBeGreaterThan(3600); // the day's admissions are still in the window
  });
});
