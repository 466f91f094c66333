// Issue 38, item 5: upstream trouble is in the log, at warn, one line per event, with the
// provider and model, the status, a redacted reason and the request id: a failed upstream, a
// router's retry on another deployment, a deployment cooling down.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEnv, standIn, type Env, type StandIn } from "../gateway/fixtures";

let env: Env;
let up: StandIn;
const SECRET = "sk-upstream-secret-38-abcdefghijklmnop";

beforeAll(async () => {
  process.env.UP38_KEY = SECRET;
  up = await standIn();
  env = await startEnv();
  await env.apply([
    { kind: "Provider", name: "dead38", spec: { type: "openai", baseUrl: "http://127.0.0.1:1/v1", timeoutSeconds: 5, credential: "env:UP38_KEY", models: [{ name: "gone38" }] } },
    { kind: "Provider", name: "pa38", spec: { type: "openai", baseUrl: up.baseUrl, timeoutSeconds: 5, models: [{ name: "fail38", upstreamName: "mode:fail500" }] } },
    { kind: "Provider", name: "pb38", spec: { type: "openai", baseUrl: up.baseUrl, timeoutSeconds: 5, models: [{ name: "ok38" }] } },
    {
      kind: "Model",
      name: "team38",
      spec: { router: { strategy: "simple-shuffle", maxAttempts: 2, backoffMs: 0, cooldown: { failures: 1, windowSeconds: 60, seconds: 30 }, deployments: [{ provider: "pa38", model: "fail38", weight: 1 }, { provider: "pb38", model: "ok38", weight: 0 }] } },
    },
  ]);
});
afterAll(async () => {
  delete process.env.UP38_KEY;
  await env?.stop();
  await up?.close();
});

const chat = (model: string, requestId: string) =>
  fetch(`${env.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${env.adminKey}`, "x-request-id": requestId },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
  });
const warnsOf = (requestId: string) => env.svc.logs.filter((l) => l.level === "warn" && l.requestId === requestId);

describe("upstream failures in the log", () => {
  it("an unreachable provider: one warn line with provider, model, status 502, reason and request id; no secret", async () => {
    const r = await chat("gone38", "req-38-dead");
    expect(r.status).toBe(502);
    const lines = warnsOf("req-38-dead");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ msg: "upstream request failed", provider: "dead38", model: "gone38", status: 502 });
    expect(typeof lines[0].reason).toBe("string");
    expect(lines[0].reason.length).toBeGreaterThan(0);
    expect(JSON.stringify(env.svc.logs)).not.toContain(SECRET);
  });

  it("a routed model: the failed attempt says it retries, the deployment's cooldown is its own line", async () => {
    const r = await chat("team38", "req-38-routed");
    expect(r.status).toBe(200);
    const lines = warnsOf("req-38-routed");
    const failed = lines.filter((l) => l.msg === "upstream request failed");
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ provider: "pa38", model: "fail38", routedModel: "team38", status: 502, attempt: 1, next: "retrying on another deployment" });
    const cool = lines.filter((l) => l.msg === "deployment cooling down");
    expect(cool).toHaveLength(1);
    expect(cool[0]).toMatchObject({ provider: "pa38", routedModel: "team38", cooldownSeconds: 30 });
  });
});
