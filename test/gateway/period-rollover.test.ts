// The UTC month and day roll-over on a real svc that sits idle across midnight (the settable test
// clock, test/helpers/clock.ts): a `monthly_budget_over` Deny stops at the new month for the very
// first request, and a key's usage shows an empty "today" before the day's first request.
import { describe, it, expect, afterAll, beforeAll } from "vitest";
import { startEnv, standIn, provider, expectError, type Env, type StandIn } from "./fixtures";
import { installClock, setNow } from "../helpers/clock";

afterAll(installClock());
setNow(Date.UTC(2026, 10, 30, 23, 0, 0)); // 2026-11-30T23:00Z, the last hour of November

let env: Env;
let up: StandIn;
const msg = [{ role: "user" as const, content: "hi" }];

beforeAll(async () => {
  up = await standIn({ promptTokens: 2, completionTokens: 5 });
  env = await startEnv();
  // $1 a token: a request spends $7
  await env.apply([provider("up", up, [{ name: "gpt-x", inputPerMillion: 1e6, outputPerMillion: 1e6 }])]);
});
afterAll(async () => {
  await env?.stop();
  await up?.close();
});

describe("an idle svc across the UTC month and day boundary", () => {
  it("refuses by monthly_budget_over in November, serves the first request of December, and shows an empty today the next day", async () => {
    const k = await env.key({
      budget_limits: { monthly: 1000 },
      policy: {
        version: "2024-01-01",
        statements: [
          { effect: "Allow", actions: ["*"], resources: ["*"] },
          { effect: "Deny", actions: ["*"], resources: ["*"], condition: { monthly_budget_over: 5 } },
        ],
      },
    });
    const c = env.client(k.secret);
    await c.chat.completions.create({ model: "gpt-x", messages: msg, max_tokens: 5 }); // $7 in November
    await expectError(c.chat.completions.create({ model: "gpt-x", messages: msg, max_tokens: 5 }), 403, "policy_denied");

    setNow(Date.UTC(2026, 11, 1, 0, 30, 0)); // December: no request came in between
    const r = await c.chat.completions.create({ model: "gpt-x", messages: msg, max_tokens: 5 });
    expect(r.choices[0].message.content).toBe("echo: hi");

    setNow(Date.UTC(2026, 11, 2, 0, 30, 0)); // the next day, before any request of it
    const g = await env.api("GET", `/v1/api-keys/${k.id}`);
    expect(g.status).toBe(200);
    expect(g.json.usage.today).toMatchObject({ spend: 0, tokens: 0, requests: 0 });
    expect(g.json.usage.month).toMatchObject({ spend: 7, tokens: 7, requests: 1 });
    expect(g.json.usage.total).toMatchObject({ spend: 14, requests: 2 });
  });
});
