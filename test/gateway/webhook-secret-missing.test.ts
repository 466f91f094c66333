// A key whose webhook secret is an env: reference that does not resolve works, but its webhook
// cannot be signed: the key's condition says so (Ready=False WebhookSecretMissing, naming the
// variable and that svc must be restarted with it) and `svc doctor` reports it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli";
import { until } from "../helpers/http";
import { startEnv, type Env } from "./fixtures";

const VAR = "SVC_TEST_WEBHOOK_SECRET_NEVER_SET";
let env: Env;
beforeAll(async () => {
  delete process.env[VAR];
  env = await startEnv();
});
afterAll(async () => {
  await env?.stop();
});

describe("a webhook secret reference that does not resolve", () => {
  it("shows in the key's condition and in svc doctor", async () => {
    // the event never fires in this test; the receiver is loopback anyway. Issue 38: a request
    // naming a reference that does not resolve is refused (400), so the variable is set when the
    // key is made and unset afterwards: the reference stops resolving later.
    process.env[VAR] = "whsec_set_at_creation";
    const made = await env.api("POST", "/v1/api-keys", { name: "hooked", webhook: { url: "http://127.0.0.1:9/hook", events: ["key.revoked"], secret: `env:${VAR}` } });
    expect(made.status, JSON.stringify(made.json)).toBe(201);
    delete process.env[VAR];
    env.svc.svc.control!.enqueue({ kind: "ApiKey", name: made.json.id });
    const cond = () => env.svc.svc.store.get("ApiKey", made.json.id)?.status.conditions?.find((c) => c.type === "Ready");
    await until(() => cond()?.reason === "WebhookSecretMissing", 10_000);
    expect(cond()).toMatchObject({ status: "False", reason: "WebhookSecretMissing" });
    expect(cond()!.message).toContain(`environment variable ${VAR} is not set in svc's environment: restart svc with it set`);
    // the key itself still works
    expect((await env.api("GET", "/v1/models", undefined, made.json.api_key)).status).toBe(200);
    const doctor = await runCli(["doctor", "--home", env.svc.home, "--port", String(env.svc.port)], { SVC_HOME: env.svc.home });
    expect(doctor.stdout).toMatch(new RegExp(`\\[FAIL\\] ApiKey/${made.json.id}: Ready=False WebhookSecretMissing: webhook secret env:${VAR}`));
    expect(doctor.code).toBe(1);
  });
});
