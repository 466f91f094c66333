// POST /v1/messages/count_tokens is a request like any other at the gate: it never reaches a
// provider the key's policy denies, counts against per_minute and max_requests, writes an audit
// entry, and spends no budget (it is free).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import Anthropic from "@anthropic-ai/sdk";
import { startEnv, type Env } from "./fixtures";
import { standIn, COUNT_TOKENS_ANSWER, type SeenRequest } from "../protocols/standins";

type Up = Awaited<ReturnType<typeof standIn>>;

describe("count_tokens at the gate", () => {
  let env: Env;
  let anth1: Up;
  let anth2: Up;

  beforeAll(async () => {
    env = await startEnv();
    anth1 = await standIn();
    anth2 = await standIn();
    await env.apply([
      { kind: "Provider", name: "anth1", spec: { type: "anthropic", baseUrl: anth1.origin, models: [{ name: "claude-x", inputPerMillion: 1, outputPerMillion: 1 }] } },
      { kind: "Provider", name: "anth2", spec: { type: "anthropic", baseUrl: anth2.origin, models: [{ name: "claude-x", inputPerMillion: 1, outputPerMillion: 1 }] } },
    ]);
  }, 60_000);
  afterAll(async () => {
    await env?.stop();
    await anth1?.close();
    await anth2?.close();
  });

  const client = (secret: string) => new Anthropic({ baseURL: env.url, apiKey: secret, maxRetries: 0 });
  const count = (secret: string) => client(secret).messages.countTokens({ model: "claude-x", messages: [{ role: "user", content: "how many?" }] });
  const counted = (seen: SeenRequest[]) => seen.filter((r) => r.path.endsWith("/messages/count_tokens")).length;
  const statusOf = (p: Promise<unknown>) => p.then(() => 200, (e: any) => e.status as number);

  it("never reaches a provider the key's AccessPolicy denies", async () => {
    await env.apply([
      { kind: "AccessPolicy", name: "not-anth1", spec: { statements: [{ effect: "Allow", actions: ["*"], resources: ["*"] }, { effect: "Deny", actions: ["*"], resources: ["provider:anth1"] }] } },
    ]);
    const k = await env.key({ policies: ["not-anth1"] });
    const [b1, b2] = [counted(anth1.requests), counted(anth2.requests)];
    for (let i = 0; i < 3; i++) expect((await count(k.secret)).input_tokens).toBe(COUNT_TOKENS_ANSWER);
    expect(counted(anth1.requests) - b1).toBe(0);
    expect(counted(anth2.requests) - b2).toBe(3);
    // a key denied both providers is refused before anything goes upstream
    const none = await env.key({ policy: { version: "2024-01-01", statements: [{ effect: "Deny", actions: ["*"], resources: ["provider:anth1", "provider:anth2"] }] } });
    await expect(count(none.secret)).rejects.toMatchObject({ status: 403, error: { error: { type: "permission_error" } } });
    expect(counted(anth1.requests) + counted(anth2.requests) - b1 - b2).toBe(3);
  });

  it("counts against per_minute: the third call in a minute is 429 with Retry-After", async () => {
    const k = await env.key({ rate_limits: { per_minute: 2 } });
    expect(await statusOf(count(k.secret))).toBe(200);
    expect(await statusOf(count(k.secret))).toBe(200);
    const third = await fetch(`${env.url}/v1/messages/count_tokens`, {
      method: "POST",
      headers: { "x-api-key": k.secret, "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "claude-x", messages: [{ role: "user", content: "x" }] }),
    });
    expect(third.status).toBe(429);
    expect(Number(third.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(((await third.json()) as any).type).toBe("error");
  });

  it("counts against max_requests of a temporary key", async () => {
    const r = await env.api("POST", "/v1/api-keys/temporary", { expires_in: 600, permissions: { models: ["claude-x"], max_requests: 2 } });
    expect(r.status).toBe(201);
    const secret = r.json.api_key as string;
    expect([await statusOf(count(secret)), await statusOf(count(secret)), await statusOf(count(secret))]).toEqual([200, 200, 402]);
  });

  it("writes an audit entry per call, refused or not, and spends no budget", async () => {
    const k = await env.key({ budget_limits: { total: 1 }, rate_limits: { per_minute: 1 } });
    expect(await statusOf(count(k.secret))).toBe(200);
    expect(await statusOf(count(k.secret))).toBe(429);
    const page = await env.gw.audit.query({ keyIds: [k.id] });
    const rows = page.data.filter((e) => e.action === "messages.count_tokens");
    expect(rows.map((e) => e.status).sort()).toEqual(["rate_limit_exceeded", "success"]);
    expect(rows.find((e) => e.status === "success")).toMatchObject({ model: "claude-x" });
    const usage = await env.api("GET", `/v1/api-keys/${k.id}`);
    expect(usage.json.usage.total.spend_usd).toBe(0);
  });
});
