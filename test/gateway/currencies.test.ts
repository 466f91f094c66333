// Currencies: budget_limits.currency takes any ISO 4217 code, Provider prices carry a currency
// (default USD), and spend is converted into the key's budget currency with the rates
// Server.spec.exchangeRates declares. A budget currency with no rate to a priced Provider's is
// refused at key creation (400 naming the pair) and at plan/apply, never counted at a wrong rate.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEnv, standIn, provider, expectError, type Env, type StandIn } from "./fixtures";
import { until } from "../helpers/http";
import { loadText } from "../../manifests";

let env: Env;
let up: StandIn;
const msg = [{ role: "user" as const, content: "hi" }];
const hash = `sha256:${"c".repeat(64)}`;

beforeAll(async () => {
  env = await startEnv();
  up = await standIn({ promptTokens: 10, completionTokens: 5 });
  // $0.10 a token: a request (10 prompt + 5 completion tokens upstream) costs $1.50
  await env.apply([
    { kind: "Server", name: "main", spec: { exchangeRates: [{ from: "EUR", to: "USD", rate: 2 }] } },
    provider("usd", up, [{ name: "gpt-usd", inputPerMillion: 100_000, outputPerMillion: 100_000 }]),
  ]);
  await until(() => (env.svc.svc.server as any).exchangeRates?.length === 1, 10_000);
});
afterAll(async () => {
  await up?.close();
  await env?.stop();
});

const apply = (document: string) => env.api("POST", "/admin/config/apply", { document, source: "cur", confirm: true });
const yaml = (kind: string, name: string, spec: string) => `apiVersion: svc/v1\nkind: ${kind}\nmetadata:\n  name: ${name}\nspec:\n${spec.replace(/^/gm, "  ")}\n`;

describe("currencies", () => {
  let eurKey: { id: string; secret: string };

  it("a EUR budget key on a USD-priced provider is charged the converted amount", async () => {
    eurKey = await env.key({ budget_limits: { daily: 10, currency: "EUR" } });
    await env.client(eurKey.secret).chat.completions.create({ model: "gpt-usd", messages: msg, max_tokens: 5 });
    const got = await env.api("GET", `/v1/api-keys/${eurKey.id}`);
    // $1.50 at 1 EUR = 2 USD (the reverse of the declared pair) is 0.75 EUR
    expect(got.json.usage.today).toMatchObject({ spend: 0.75, currency: "EUR", requests: 1 });
    expect(got.json.usage.today.spend_usd).toBeUndefined();
    expect(got.json.budget_limits).toEqual({ daily: 10, currency: "EUR" });
    // a USD key on the same provider pays the price as it is
    const usdKey = await env.key({ budget_limits: { daily: 10 } });
    await env.client(usdKey.secret).chat.completions.create({ model: "gpt-usd", messages: msg, max_tokens: 5 });
    expect((await env.api("GET", `/v1/api-keys/${usdKey.id}`)).json.usage.today).toMatchObject({ spend_usd: 1.5, spend: 1.5, currency: "USD" });
  });

  it("refusals name the budget in its currency", async () => {
    const k = await env.key({ budget_limits: { total: 0.5, currency: "EUR" } });
    const c = env.client(k.secret);
    await c.chat.completions.create({ model: "gpt-usd", messages: msg, max_tokens: 5 }); // 0.75 EUR
    const e = await expectError(c.chat.completions.create({ model: "gpt-usd", messages: msg, max_tokens: 5 }), 402, "budget_exceeded");
    expect(e.message).toContain("total=0.50 EUR");
  });

  it("takes any ISO 4217 code and refuses others, naming the field", async () => {
    const bad = await env.createKey({ name: "x", budget_limits: { daily: 1, currency: "ABC" } });
    expect(bad.status).toBe(400);
    expect(bad.json.error.param).toBe("budget_limits.currency");
    const issues = (cur: string) => loadText(yaml("ApiKey", "k", `secretHash: "${hash}"\nbudget_limits: {daily: 1, currency: ${cur}}`), "k.yaml").issues.filter((i) => i.severity === "error");
    expect(issues("CHF")).toEqual([]);
    expect(issues("JPY")).toEqual([]);
    expect(issues("XYZ").map((i) => i.path)).toEqual(["/spec/budget_limits/currency"]);
  });

  it("without a rate, create is refused 400 naming the pair, and apply reports it", async () => {
    // a Provider priced in JPY while EUR keys exist and no JPY rate is declared: refused at apply
    const yen = yaml("Provider", "yen", `type: openai\nbaseUrl: ${up.baseUrl}\ncurrency: JPY\nmodels: [{name: gpt-yen, inputPerMillion: 15000, outputPerMillion: 15000}]`);
    const refused = await apply(yen);
    expect(refused.status).toBe(422);
    expect(JSON.stringify(refused.json)).toContain("no exchange rate between JPY (the prices of Provider yen) and EUR");
    // and it is refused for want of a rate to USD too: the audit log reports cost in USD
    expect(JSON.stringify(refused.json)).toContain("Provider/yen: prices in JPY need a rate to USD");
    expect(env.svc.svc.store.get("Provider", "yen")).toBeUndefined();

    // the same Provider with a rate declared alongside applies
    const server = yaml("Server", "main", "exchangeRates:\n- {from: EUR, to: USD, rate: 2}\n- {from: EUR, to: JPY, rate: 160}\n- {from: USD, to: JPY, rate: 150}");
    const ok = await apply(`${server}---\n${yen}`);
    expect(ok.status, JSON.stringify(ok.json)).toBe(200);
    await until(() => (env.svc.svc.server as any).exchangeRates?.length === 3, 10_000);

    // a GBP key now has no rate to USD or JPY: refused, naming the pair
    const gbp = await env.createKey({ name: "gbp", budget_limits: { monthly: 5, currency: "GBP" } });
    expect(gbp.status).toBe(400);
    expect(gbp.json.error).toMatchObject({ code: "invalid_request", param: "budget_limits.currency" });
    expect(gbp.json.error.message).toMatch(/no exchange rate between (USD|JPY) \(the prices of Provider (usd|yen)\) and GBP/);
    // and so is an ApiKey manifest with that budget
    const manifest = await apply(yaml("ApiKey", "gbp-key", `secretHash: "${hash}"\nbudget_limits: {monthly: 5, currency: GBP}`));
    expect(manifest.status).toBe(422);
    expect(JSON.stringify(manifest.json)).toContain("ApiKey/gbp-key: no exchange rate between");
    expect(env.svc.svc.store.get("ApiKey", "gbp-key")).toBeUndefined();

    // the EUR key is charged on the JPY provider at the declared rate: 15 tokens at 0.015 JPY = 0.225 JPY = 0.00140625 EUR
    const before = (await env.api("GET", `/v1/api-keys/${eurKey.id}`)).json.usage.today.spend;
    await env.client(eurKey.secret).chat.completions.create({ model: "gpt-yen", messages: msg, max_tokens: 5 });
    const after = (await env.api("GET", `/v1/api-keys/${eurKey.id}`)).json.usage.today.spend;
    expect(after - before).toBeCloseTo(0.001407, 6); // rounded up to the micro-euro
    // the audit entry's cost_usd is in USD whatever the budget currency: 0.225 JPY at 150 JPY per USD
    const res = await fetch(`${env.url}/v1/audit-logs?limit=1`, { headers: { authorization: `Bearer ${eurKey.secret}`, "x-api-key-id": eurKey.id } });
    expect(res.status).toBe(200);
    const last = ((await res.json()) as any).data[0];
    expect(last).toMatchObject({ model: "gpt-yen", status: "success" });
    expect(last.cost_usd).toBeCloseTo(0.0015, 6);
  });

  it("keys along one organization's roll-up count in one currency (spend rolls up as one amount)", async () => {
    const org = await env.createKey({ name: "acme-eur", key_type: "organization", organization_id: "acme-eur", budget_limits: { monthly: 100, currency: "EUR" } });
    expect(org.status).toBe(201);
    // a member counting in USD (no budget) would add dollars to the organization's euro budget
    const usd = await env.createKey({ name: "u1", organization_id: "acme-eur", team_id: "t", user_id: "u1" });
    expect(usd.status).toBe(400);
    expect(usd.json.error).toMatchObject({ code: "invalid_request", param: "budget_limits.currency" });
    expect(usd.json.error.message).toContain(`counts spend in USD but key ${org.json.id} above it budgets in EUR`);
    const eur = await env.createKey({ name: "u1", organization_id: "acme-eur", team_id: "t", user_id: "u1", budget_limits: { daily: 5, currency: "EUR" } });
    expect(eur.status).toBe(201);
    // a member without a budget names the currency it counts in
    expect((await env.createKey({ name: "u4", organization_id: "acme-eur", team_id: "t", user_id: "u4", budget_limits: { currency: "EUR" } })).status).toBe(201);
    // another organization is not affected, and a budget change that would break the rule is refused
    expect((await env.createKey({ name: "u2", organization_id: "other", team_id: "t", user_id: "u2" })).status).toBe(201);
    const patched = await env.api("PATCH", `/v1/api-keys/${org.json.id}`, { budget_limits: { monthly: 100, currency: "USD" } });
    expect(patched.status).toBe(400);
    expect(patched.json.error.message).toContain(`budgets in USD but key ${eur.json.id} below it counts spend in EUR`);
    // a manifest key the same
    const m = await apply(yaml("ApiKey", "m-u3", `secretHash: "${hash}"\norganization_id: acme-eur\nteam_id: t\nuser_id: u3`));
    expect(m.status).toBe(422);
    expect(JSON.stringify(m.json)).toContain("ApiKey/m-u3 counts spend in USD but key");
    expect(env.svc.svc.store.get("ApiKey", "m-u3")).toBeUndefined();
  });

  it("a rate removed after the key was made refuses the request instead of guessing", async () => {
    // written straight to the store (as another replica or an older plan could leave it)
    await env.apply([{ kind: "Server", name: "main", spec: { exchangeRates: [{ from: "EUR", to: "JPY", rate: 160 }] } }]);
    await until(() => (env.svc.svc.server as any).exchangeRates?.length === 1, 10_000);
    const n = up.requests.length;
    const e = await expectError(env.client(eurKey.secret).chat.completions.create({ model: "gpt-usd", messages: msg, max_tokens: 5 }), 403, "permission_denied");
    expect(e.message).toContain("no exchange rate from USD to EUR");
    expect(up.requests.length).toBe(n);
  });

  it("a Provider priced in another currency may not set media prices (USD only)", () => {
    const r = loadText(yaml("Provider", "m", "type: openai\nbaseUrl: http://127.0.0.1:9/v1\ncurrency: EUR\nmodels: [{name: img, perImage: 0.04}]"), "p.yaml");
    expect(r.issues.filter((i) => i.severity === "error").map((i) => `${i.path}: ${i.message}`)).toEqual([expect.stringContaining("/spec/models/0: media prices")]);
  });
});
