// Local GGUF models (Model objects) are a provider like any other: "local", free (price 0), so a
// budgeted key may use them; policies see provider:local.
import { describe, it, expect, afterAll, beforeAll } from "vitest";
import { ensureTinyModel } from "../../engines/inference";
import { startEnv, expectError, type Env } from "./fixtures";
import { until } from "../helpers/http";
import { pinToMiddayUtc } from "../helpers/clock";

// "today's" usage is compared across steps: a clock that cannot cross a UTC midnight in this file
afterAll(pinToMiddayUtc());

let env: Env;
beforeAll(async () => {
  env = await startEnv();
  await ensureTinyModel(env.svc.svc.modelsDir);
  await env.apply([{ kind: "Model", name: "tiny", spec: { file: "svc-tiny.gguf", threads: 1, contextSize: 512, parallel: 2 } }]);
  await until(() => env.svc.svc.store.get("Model", "tiny")?.status.conditions?.[0]?.status === "True", 20_000);
});
afterAll(async () => {
  await env?.stop();
});

describe("local models through the gateway", () => {
  it("serve a budgeted key at price 0, counting tokens; policies see provider:local", async () => {
    const k = await env.key({ budget_limits: { daily: 0.01 } });
    const c = env.client(k.secret);
    const r = await c.chat.completions.create({ model: "tiny", messages: [{ role: "user", content: "hello" }], max_tokens: 8, temperature: 0 });
    expect(typeof r.choices[0].message.content).toBe("string");
    expect(r.usage!.completion_tokens).toBeGreaterThan(0);
    const s = await c.chat.completions.create({ model: "tiny", messages: [{ role: "user", content: "hello" }], max_tokens: 8, stream: true });
    for await (const _ of s);
    const one = await env.api("GET", `/v1/api-keys/${k.id}`);
    expect(one.json.usage.today.requests).toBe(2);
    expect(one.json.usage.today.tokens).toBeGreaterThan(0);
    expect(one.json.usage.today.spend_usd).toBe(0);
    const page = await env.gw.audit.query({ keyIds: [k.id] });
    expect(page.data[0]).toMatchObject({ provider: "local", model: "tiny", status: "success", cost_usd: 0 });

    const denied = await env.key({ policy: { version: "2024-01-01", statements: [{ effect: "Allow", actions: ["*"], resources: ["*"] }, { effect: "Deny", actions: ["*"], resources: ["provider:local"] }] } });
    await expectError(env.client(denied.secret).chat.completions.create({ model: "tiny", messages: [{ role: "user", content: "hello" }], max_tokens: 4 }), 403, "policy_denied");
  });
});
