// Provider type azure-openai against the Azure OpenAI stand-in (api-version, api-key or Entra ID
// token, deployments): the client matrix (matrix.ts), the deployment map and api-version sent.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEnv, expectError, type Env } from "../gateway/fixtures";
import { azureStandIn } from "./standins/azure";
import { providerMatrix } from "./matrix";

let env: Env;
let az: Awaited<ReturnType<typeof azureStandIn>>;

beforeAll(async () => {
  process.env.AZ_TEST_KEY = "azure-key-0123456789abcdef";
  process.env.AZ_TEST_BAD_KEY = "azure-wrong-key-9876543210";
  process.env.AZ_TEST_ENTRA = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.entra-standin-token";
  az = await azureStandIn({ apiKey: process.env.AZ_TEST_KEY, entraToken: process.env.AZ_TEST_ENTRA, deployments: ["prod-gpt4o"] });
  env = await startEnv();
  const spec = (extra: Record<string, unknown>) => ({ type: "azure-openai", baseUrl: az.origin, timeoutSeconds: 10, apiVersion: "2024-10-21", ...extra });
  await env.apply([
    { kind: "Provider", name: "azure-east", spec: spec({ credential: "env:AZ_TEST_KEY", deployments: { "gpt-4o": "prod-gpt4o" }, models: [{ name: "gpt-4o", inputPerMillion: 2.5, outputPerMillion: 10 }] }) },
    { kind: "Provider", name: "azure-entra", spec: spec({ credential: "env:AZ_TEST_ENTRA", auth: "entra-id", models: [{ name: "gpt-4o-entra", upstreamName: "prod-gpt4o" }] }) },
    { kind: "Provider", name: "azure-badkey", spec: spec({ credential: "env:AZ_TEST_BAD_KEY", deployments: { "gpt-4o-bad": "prod-gpt4o" }, models: [{ name: "gpt-4o-bad" }] }) },
    { kind: "Provider", name: "azure-oldapi", spec: spec({ credential: "env:AZ_TEST_KEY", apiVersion: "2023-03-15-preview", deployments: { "gpt-4o-old": "prod-gpt4o" }, models: [{ name: "gpt-4o-old" }] }) },
  ]);
});
afterAll(async () => {
  await env?.stop();
  await az?.close();
});

describe("azure-openai", () => {
  providerMatrix(() => ({ env, model: "gpt-4o", provider: "azure-east", price: { input: 2.5, output: 10 }, badModel: "gpt-4o-bad", badProvider: "azure-badkey", badSecret: process.env.AZ_TEST_BAD_KEY! }));

  it("posts to the mapped deployment with the api-version, the key in api-key and no model in the body", async () => {
    const n = az.requests.length;
    const k = await env.key();
    await env.client(k.secret).chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "x" }] });
    expect(az.requests.length).toBe(n + 1);
    const got = az.requests[n];
    expect(got.url).toBe("/openai/deployments/prod-gpt4o/chat/completions?api-version=2024-10-21");
    expect(got.headers["api-key"]).toBe(process.env.AZ_TEST_KEY);
    expect(got.headers.authorization).toBeUndefined();
    expect(got.body.model).toBeUndefined();
  });

  it("an Entra ID token goes as a bearer token", async () => {
    const k = await env.key();
    const r = await env.client(k.secret).chat.completions.create({ model: "gpt-4o-entra", messages: [{ role: "user", content: "entra" }] });
    expect(r.choices[0].message.content).toBe("echo: entra");
    const got = az.requests[az.requests.length - 1];
    expect(got.headers.authorization).toBe(`Bearer ${process.env.AZ_TEST_ENTRA}`);
    expect(got.headers["api-key"]).toBeUndefined();
  });

  it("an api-version Azure does not support is refused by Azure and reported as such", async () => {
    const k = await env.key();
    const e = await expectError(env.client(k.secret).chat.completions.create({ model: "gpt-4o-old", messages: [{ role: "user", content: "x" }] }), 400, "invalid_request");
    expect(e.message).toContain("provider azure-oldapi refused the request: API version not supported");
  });
});
