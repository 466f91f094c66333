// The gateway's events reach a key's webhook: key.created and key.revoked from the key routes,
// key.limit_exceeded from the pipeline, signed with the secret given in clear at creation (kept
// out of the store as a 0600 file reference), only the events the webhook lists.
import { describe, it, expect, afterAll, beforeAll } from "vitest";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { statSync } from "node:fs";
import { startEnv, standIn, provider, expectError, type Env, type StandIn } from "./fixtures";
import { until } from "../helpers/http";
import { verifySignature } from "../../engines/gateway/webhooks/signature";

let env: Env;
let up: StandIn;
const got: Array<{ headers: IncomingHttpHeaders; body: string }> = [];
let hookUrl = "";
let close: () => Promise<void>;
const msg = [{ role: "user" as const, content: "hi" }];

beforeAll(async () => {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      got.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      res.end("ok");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  hookUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  close = () => new Promise<void>((r) => server.close(() => r()));
  up = await standIn();
  env = await startEnv();
  await env.apply([provider("up", up, [{ name: "gpt-x", inputPerMillion: 1, outputPerMillion: 1 }])]);
});
afterAll(async () => {
  await env?.stop();
  await up?.close();
  await close?.();
});

const events = (keyId: string) => got.map((g) => ({ ...g, json: JSON.parse(g.body) })).filter((g) => g.json.data.key_id === keyId);

describe("webhook events", () => {
  it("key.created, key.limit_exceeded and key.revoked are delivered signed with the key's secret", async () => {
    const secret = "whsec_test_signing_secret";
    const r = await env.createKey({
      name: "hooked",
      rate_limits: { per_minute: 1 },
      webhook: { enabled: true, url: hookUrl, events: ["key.created", "key.revoked", "key.limit_exceeded"], secret },
    });
    expect(r.status).toBe(201);
    const id = r.json.id;
    const ref = env.svc.svc.store.get("ApiKey", id)!.spec.webhook.secret as string;
    expect(ref).toMatch(/^file:/);
    expect(statSync(ref.slice(5)).mode & 0o777).toBe(0o600);

    await until(() => events(id).some((e) => e.json.type === "key.created"));
    const c = env.client(r.json.api_key);
    await c.chat.completions.create({ model: "gpt-x", messages: msg });
    await expectError(c.chat.completions.create({ model: "gpt-x", messages: msg }), 429, "rate_limit_exceeded");
    await until(() => events(id).some((e) => e.json.type === "key.limit_exceeded"));
    expect((await env.api("DELETE", `/v1/api-keys/${id}`)).status).toBe(200);
    await until(() => events(id).some((e) => e.json.type === "key.revoked"));

    for (const e of events(id)) {
      expect(verifySignature(secret, String(e.headers["svc-webhook-timestamp"]), e.body, String(e.headers["svc-webhook-signature"]))).toBe(true);
      expect(e.body).not.toContain(r.json.api_key);
    }
    const limit = events(id).find((e) => e.json.type === "key.limit_exceeded")!;
    expect(limit.json.data.limit).toBe("per_minute=1");
  });

  it("a webhook gets only the events it lists", async () => {
    const r = await env.createKey({ name: "only-revoked", webhook: { url: hookUrl, events: ["key.revoked"], secret: "another-secret-value" } });
    const id = r.json.id;
    await env.api("DELETE", `/v1/api-keys/${id}`);
    await until(() => events(id).length > 0);
    await env.gw.outbox.deliverDue();
    expect(events(id).map((e) => e.json.type)).toEqual(["key.revoked"]);
  });

  it("with AlertSettings.rate_limit_percentage, a request that fills the rate window that far sends a warning first", async () => {
    await env.apply([{ kind: "AlertSettings", name: "default", spec: { rate_limit_percentage: 50 } }]);
    try {
      const r = await env.createKey({ name: "warned", rate_limits: { per_minute: 4 }, webhook: { url: hookUrl, events: ["key.limit_exceeded"], secret: "warning-secret-value" } });
      const id = r.json.id;
      const c = env.client(r.json.api_key);
      await c.chat.completions.create({ model: "gpt-x", messages: msg }); // 25% used: no warning
      await env.gw.outbox.deliverDue();
      expect(events(id)).toHaveLength(0);
      await c.chat.completions.create({ model: "gpt-x", messages: msg }); // 50% used
      await until(() => events(id).length > 0);
      expect(events(id)[0].json.data).toMatchObject({ kind: "rate_limit_warning", used_percentage: 50, threshold_percentage: 50, requests_limit: 4 });
    } finally {
      await env.svc.svc.store.write([{ op: "delete", kind: "AlertSettings", name: "default" }]);
    }
  });

  it("a team key's budget threshold fires on the spend of its member keys (roll-up), once", async () => {
    // $0.10 a token: a request (10 prompt + 5 completion tokens upstream) costs $1.50
    await env.apply([provider("pricey", up, [{ name: "gpt-pricey", inputPerMillion: 100_000, outputPerMillion: 100_000 }])]);
    const team = await env.createKey({
      name: "team-budget",
      key_type: "team",
      organization_id: "org-alerts",
      team_id: "t-alerts",
      budget_limits: { daily: 10 },
      budget_alerts: { thresholds: [20, 50] },
      webhook: { url: hookUrl, events: ["key.budget_threshold"], secret: "team-budget-secret" },
    });
    expect(team.status).toBe(201);
    const member = await env.key({ key_type: "user", organization_id: "org-alerts", team_id: "t-alerts", user_id: "dana" });
    const c = env.client(member.secret);
    await c.chat.completions.create({ model: "gpt-pricey", messages: msg, max_tokens: 5 }); // team $1.50: 15%
    await env.gw.outbox.deliverDue();
    expect(events(team.json.id)).toHaveLength(0);
    await c.chat.completions.create({ model: "gpt-pricey", messages: msg, max_tokens: 5 }); // team $3.00: 30%
    await until(() => events(team.json.id).length === 1);
    expect(events(team.json.id)[0].json).toMatchObject({ type: "key.budget_threshold", data: { key_id: team.json.id, period: "daily", threshold: 20, spend_usd: 3, budget_usd: 10 } });
    await c.chat.completions.create({ model: "gpt-pricey", messages: msg, max_tokens: 5 }); // $4.50: 45%, 20 already sent
    await env.gw.outbox.deliverDue();
    expect(events(team.json.id)).toHaveLength(1);
  });

  it("a budget threshold of a EUR key reports spend and budget in EUR, not under USD names", async () => {
    await env.apply([{ kind: "Server", name: "main", spec: { exchangeRates: [{ from: "EUR", to: "USD", rate: 2 }] } }]);
    await until(() => (env.svc.svc.server as any).exchangeRates?.length === 1);
    const k = await env.createKey({
      name: "euro-budget",
      budget_limits: { daily: 2, currency: "EUR" },
      budget_alerts: { thresholds: [30] },
      webhook: { url: hookUrl, events: ["key.budget_threshold"], secret: "euro-budget-secret" },
    });
    expect(k.status).toBe(201);
    await env.client(k.json.api_key).chat.completions.create({ model: "gpt-pricey", messages: msg, max_tokens: 5 }); // $1.50 = 0.75 EUR: 37.5%
    await until(() => events(k.json.id).length === 1);
    const data = events(k.json.id)[0].json.data;
    expect(data).toMatchObject({ period: "daily", threshold: 30, percent_used: 37.5, spend: 0.75, budget: 2, currency: "EUR" });
    expect(data).not.toHaveProperty("spend_usd");
    expect(data).not.toHaveProperty("budget_usd");
  });
});
