// Key routes and key states: create -> usable, PATCH limits in place, DELETE -> revoked,
// expiry -> expired; rights of admin / master / organization / plain keys; manifest keys.
import { Cancellation } from "../../engines/chat/cancel";
import { describe, it, expect, afterAll, beforeAll, onTestFinished } from "vitest";
import { httpView } from "../helpers/errors";
import { statSync } from "node:fs";
import path from "node:path";
import { startEnv, standIn, provider, expectError, type Env, type StandIn } from "./fixtures";
import { until } from "../helpers/http";
import { receiver } from "../gateway-events/helpers";
import { generateSecret, hashSecret } from "../../engines/gateway/keys";

const MASTER = "sk-svc-test-master-key-0123456789abcdefghijklmnopq";
process.env.SVC_MASTER_KEY = MASTER;

let env: Env;
let up: StandIn;
const msg = (content = "hi") => [{ role: "user" as const, content }];

beforeAll(async () => {
  up = await standIn();
  env = await startEnv();
  await env.apply([provider("up", up, [{ name: "gpt-x", inputPerMillion: 1, outputPerMillion: 2 }, { name: "gpt-y" }])]);
});
afterAll(async () => {
  await env?.stop();
  await up?.close();
});

describe("administrative key", () => {
  it("is generated on first start into a 0600 file", () => {
    const st = statSync(path.join(env.home, "admin.key"));
    expect(st.mode & 0o777).toBe(0o600);
    expect(env.adminKey).toMatch(/^sk-svc-[0-9A-Za-z]{43}$/);
  });
});

describe("create -> usable", () => {
  it("returns the secret once, with every key field, and the key works at once", async () => {
    const rx = await receiver(); // the key's webhook: a loopback receiver, never a remote host
    onTestFinished(rx.close);
    const body = {
      name: "prod backend",
      description: "production",
      key_type: "user",
      organization_id: "org-a",
      team_id: "team-1",
      user_id: "u-1",
      permissions: { models: ["gpt-*"], actions: ["chat:completions", "chat:stream"] },
      rate_limits: { per_minute: 60, per_hour: 1000, per_day: 10000, burst: 10 },
      budget_limits: { daily: 10, monthly: 100, total: 1000, currency: "USD" },
      budget_alerts: { thresholds: [50, 90], notify_email: "ops@example.com" },
      token_limits: { daily: 100000, monthly: 1000000, per_request_max: 4000 },
      expires_at: null,
      ip_allowlist: { enabled: true, addresses: ["127.0.0.0/8", "::1"] },
      webhook: { enabled: true, url: rx.url, events: ["key.created", "key.revoked"], secret: "whsec_clear_text_secret" },
    };
    const r = await env.createKey(body);
    expect(r.status).toBe(201);
    const k = r.json;
    expect(k.api_key).toMatch(/^sk-svc-[0-9A-Za-z]{43}$/);
    expect(k.id).toMatch(/^key_[a-z0-9]{20}$/);
    expect(k.status).toBe("active");
    expect(k.expires_at).toBeNull();
    expect(typeof k.created_at).toBe("string");
    for (const f of ["name", "description", "key_type", "organization_id", "team_id", "user_id", "permissions", "rate_limits", "budget_limits", "budget_alerts", "token_limits", "ip_allowlist"]) {
      expect(k[f]).toEqual((body as any)[f]);
    }
    expect(k.webhook).toEqual({ enabled: true, url: body.webhook.url, events: body.webhook.events, secret_configured: true });
    // the store holds only the hash and a reference to the webhook secret
    const stored = env.svc.svc.store.get("ApiKey", k.id)!;
    expect(stored.owner).toBe("api");
    expect(stored.spec.secretHash).toBe(`sha256:${hashSecret(k.api_key)}`);
    expect(JSON.stringify(stored.spec)).not.toContain(k.api_key);
    expect(JSON.stringify(stored.spec)).not.toContain("whsec_clear_text_secret");
    expect(stored.spec.webhook.secret).toMatch(/^file:/);

    const out = await env.client(k.api_key).chat.completions.create({ model: "gpt-x", messages: msg() });
    expect(out.choices[0].message.content).toBe("echo: hi");

    // never shown again
    const list = await env.api("GET", "/v1/api-keys");
    expect(list.status).toBe(200);
    const item = list.json.keys.find((x: any) => x.id === k.id);
    expect(item.name).toBe("prod backend");
    expect(item.status).toBe("active");
    expect(JSON.stringify(list.json)).not.toContain(k.api_key);
    expect(JSON.stringify(list.json)).not.toContain("sha256:");
    const one = await env.api("GET", `/v1/api-keys/${k.id}`);
    expect(one.status).toBe(200);
    expect(one.json.api_key).toBeUndefined();
    expect(one.json.usage.total.requests).toBe(1);
    // key.created reached the loopback receiver
    await until(() => rx.got.length >= 1, 10_000);
    expect(JSON.parse(rx.got[0].body)).toMatchObject({ type: "key.created", data: { key_id: k.id } });
  });

  it("refuses invalid bodies with 400 invalid_request naming the field", async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ name: "x", rate_limits: { per_minute: 0 } }, "rate_limits.per_minute"],
      [{ name: "x", rate_limits: { per_second: 3 } }, "rate_limits.per_second"],
      [{ name: "x", key_type: "admin" }, "key_type"],
      [{ name: "x", expires_at: "tomorrow" }, "expires_at"],
      [{ name: "x", expires_at: "2001-01-01T00:00:00Z" }, "expires_at"],
      [{ name: "x", ip_allowlist: { enabled: true, addresses: ["10.0.0.0/33"] } }, "ip_allowlist.addresses"],
      [{ name: "x", webhook: { url: "http://hooks.example.com/x", events: ["key.created"] } }, "webhook.url"],
      [{ name: "x", policies: ["no-such-policy"] }, "policies"],
      [{ name: "x", key_type: "team" }, "team_id"],
      [{ name: "x", unknown_field: 1 }, "unknown_field"],
    ];
    for (const [body, field] of cases) {
      const r = await env.createKey(body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.json.error.code).toBe("invalid_request");
      expect(r.json.error.param).toBe(field);
      expect(r.json.error.message).toContain(field);
    }
  });
});

describe("PATCH limits in place", () => {
  it("changes limits live and keeps counters", async () => {
    const k = await env.key({ rate_limits: { per_minute: 2 } });
    const c = env.client(k.secret);
    await c.chat.completions.create({ model: "gpt-x", messages: msg() });
    await c.chat.completions.create({ model: "gpt-x", messages: msg() });
    const e = await expectError(c.chat.completions.create({ model: "gpt-x", messages: msg() }), 429, "rate_limit_exceeded");
    expect(e.message).toContain("per_minute=2");

    const p = await env.api("PATCH", `/v1/api-keys/${k.id}`, { rate_limits: { per_minute: 5 }, budget_limits: { daily: 50 } });
    expect(p.status).toBe(200);
    expect(p.json.rate_limits).toEqual({ per_minute: 5 });
    expect(p.json.budget_limits).toEqual({ daily: 50, currency: "USD" });
    expect(p.json.status).toBe("active");
    // two used of 5: three more, then refused again (the used count was kept)
    for (let i = 0; i < 3; i++) await c.chat.completions.create({ model: "gpt-x", messages: msg() });
    const e2 = await expectError(c.chat.completions.create({ model: "gpt-x", messages: msg() }), 429, "rate_limit_exceeded");
    expect(e2.message).toContain("per_minute=5");
    const one = await env.api("GET", `/v1/api-keys/${k.id}`);
    expect(one.json.usage.total.requests).toBe(5);

    // null removes a limit
    const p2 = await env.api("PATCH", `/v1/api-keys/${k.id}`, { rate_limits: null });
    expect(p2.json.rate_limits).toBeNull();
    await c.chat.completions.create({ model: "gpt-x", messages: msg() });

    const bad = await env.api("PATCH", `/v1/api-keys/${k.id}`, { key_type: "organization" });
    expect(bad.status).toBe(400);
    expect(bad.json.error.param).toBe("key_type");
  });
});

describe("DELETE -> revoked", () => {
  it("revokes: the next request is refused with 401 key_revoked, and the key stays listed", async () => {
    const k = await env.key();
    const c = env.client(k.secret);
    await c.chat.completions.create({ model: "gpt-x", messages: msg() });
    const d = await env.api("DELETE", `/v1/api-keys/${k.id}`);
    expect(d.status).toBe(200);
    expect(d.json.status).toBe("revoked");
    expect(d.json.revoked_at).toBeTruthy();
    await expectError(c.chat.completions.create({ model: "gpt-x", messages: msg() }), 401, "key_revoked");
    // streaming too
    await expectError(c.chat.completions.create({ model: "gpt-x", messages: msg(), stream: true }), 401, "key_revoked");
    const list = await env.api("GET", "/v1/api-keys?status=revoked");
    expect(list.json.keys.map((x: any) => x.id)).toContain(k.id);
    // `data` as every other list answers, `keys` (the spec's name) the same array
    expect(list.json.data).toEqual(list.json.keys);
    await until(() => env.svc.svc.store.get("ApiKey", k.id)?.status.conditions?.[0]?.reason === "Revoked");
    // a revoked key cannot be patched
    const p = await env.api("PATCH", `/v1/api-keys/${k.id}`, { name: "again" });
    expect(p.status).toBe(409);
  });
});

describe("expiry -> expired", () => {
  it("refuses the key with 401 key_expired once expires_at passes; status flips to Expired", async () => {
    // usable while unexpired (an hour away, so no stall of this machine can matter), then moved
    // to a second from now
    const k = await env.key({ expires_at: new Date(Date.now() + 3_600_000).toISOString() });
    const c = env.client(k.secret);
    const before = await c.chat.completions.create({ model: "gpt-x", messages: msg() });
    expect(before.choices[0].message.content).toBe("echo: hi");
    const expiresAt = new Date(Date.now() + 1000).toISOString();
    const p = await env.api("PATCH", `/v1/api-keys/${k.id}`, { expires_at: expiresAt });
    expect(p.status).toBe(200);
    await until(() => Date.now() > Date.parse(expiresAt) + 5, 10_000);
    await expectError(c.chat.completions.create({ model: "gpt-x", messages: msg() }), 401, "key_expired");
    await until(() => env.svc.svc.store.get("ApiKey", k.id)?.status.conditions?.[0]?.reason === "Expired", 10_000);
    const one = await env.api("GET", `/v1/api-keys/${k.id}`);
    expect(one.json.status).toBe("expired");
  });
});

describe("authentication failures", () => {
  it("unknown key -> 401 invalid_api_key; the error never echoes the key", async () => {
    const fake = generateSecret();
    const e = await expectError(env.client(fake).chat.completions.create({ model: "gpt-x", messages: msg() }), 401, "invalid_api_key");
    expect(e.message).not.toContain(fake);
  });

  it("missing key off loopback (or with unauthenticated loopback off) -> 401 invalid_api_key", async () => {
    const caller = { ip: "10.1.2.3", loopback: false, requestId: "r1", route: "/v1/chat/completions" };
    const req = { model: "gpt-x", messages: msg(), sampling: {}, stream: false };
    await expect(env.gw.pipeline.chat(caller, req, new Cancellation()).catch(httpView)).resolves.toMatchObject({ status: 401, code: "invalid_api_key" });
    // loopback without a key is allowed by default
    const start = await env.gw.pipeline.chat({ ...caller, ip: "127.0.0.1", loopback: true }, req, new Cancellation());
    for await (const _ of start.events);
    // but a key that is sent is always checked, on loopback too
    await expect(env.gw.pipeline.chat({ ...caller, ip: "127.0.0.1", loopback: true, token: "sk-svc-nope" }, req, new Cancellation()).catch(httpView)).resolves.toMatchObject({
      status: 401,
      code: "invalid_api_key",
    });
  });
});

describe("temporary keys", () => {
  it("the master key creates temporary keys and nothing else", async () => {
    const r = await env.api("POST", "/v1/api-keys/temporary", { expires_in: 3600, permissions: { models: ["gpt-x"], max_requests: 2 }, metadata: { purpose: "ci" } }, MASTER);
    expect(r.status).toBe(201);
    expect(r.json.api_key).toMatch(/^sk-svc-/);
    expect(r.json.key_type).toBe("temporary");
    expect(Date.parse(r.json.expires_at) - Date.now()).toBeGreaterThan(3500_000);
    expect(r.json.metadata).toEqual({ purpose: "ci" });
    const c = env.client(r.json.api_key);
    await c.chat.completions.create({ model: "gpt-x", messages: msg() });
    await expectError(c.chat.completions.create({ model: "gpt-y", messages: msg() }), 403, "permission_denied");
    await c.chat.completions.create({ model: "gpt-x", messages: msg() });
    const q = await expectError(c.chat.completions.create({ model: "gpt-x", messages: msg() }), 402, "quota_exceeded");
    expect(q.message).toContain("max_requests=2");

    expect((await env.api("GET", "/v1/api-keys", undefined, MASTER)).status).toBe(403);
    expect((await env.api("POST", "/v1/api-keys", { name: "x" }, MASTER)).status).toBe(403);
    await expectError(env.client(MASTER).chat.completions.create({ model: "gpt-x", messages: msg() }), 403, "permission_denied");
    // bounds
    expect((await env.api("POST", "/v1/api-keys/temporary", { expires_in: 40 * 86400 }, MASTER)).status).toBe(400);
    expect((await env.api("POST", "/v1/api-keys/temporary", {}, MASTER)).json.error.param).toBe("expires_in");
    // the admin key is a master key too; a plain key is not
    expect((await env.api("POST", "/v1/api-keys/temporary", { expires_in: 60 })).status).toBe(201);
    const plain = await env.key();
    expect((await env.api("POST", "/v1/api-keys/temporary", { expires_in: 60 }, plain.secret)).status).toBe(403);
  });
});

describe("organization keys", () => {
  it("an organization key with manage_keys manages only its organization's keys", async () => {
    const org = await env.key({ key_type: "organization", organization_id: "org-m", permissions: { manage_keys: true } });
    const other = await env.createKey({ name: "other org user", key_type: "user", organization_id: "org-z", team_id: "t-z", user_id: "zoe" });
    expect(other.status).toBe(201);

    const mine = await env.createKey({ name: "team key", key_type: "team", team_id: "t1", permissions: { models: ["gpt-x"] } }, org.secret);
    expect(mine.status).toBe(201);
    expect(mine.json.organization_id).toBe("org-m");
    expect((await env.createKey({ name: "x", key_type: "user", organization_id: "org-z" }, org.secret)).status).toBe(403);
    expect((await env.createKey({ name: "x", key_type: "organization", organization_id: "org-m" }, org.secret)).status).toBe(403);

    const list = await env.api("GET", "/v1/api-keys", undefined, org.secret);
    expect(list.status).toBe(200);
    const ids = list.json.keys.map((k: any) => k.id);
    expect(ids).toContain(mine.json.id);
    expect(ids).not.toContain(other.json.id);
    expect(list.json.keys.every((k: any) => k.organization_id === "org-m")).toBe(true);

    expect((await env.api("PATCH", `/v1/api-keys/${mine.json.id}`, { rate_limits: { per_minute: 3 } }, org.secret)).status).toBe(200);
    expect((await env.api("PATCH", `/v1/api-keys/${other.json.id}`, { rate_limits: { per_minute: 3 } }, org.secret)).status).toBe(404);
    expect((await env.api("DELETE", `/v1/api-keys/${other.json.id}`, undefined, org.secret)).status).toBe(404);
    expect((await env.api("DELETE", `/v1/api-keys/${mine.json.id}`, undefined, org.secret)).json.status).toBe("revoked");

    // without manage_keys, or a plain key: 403
    const orgRo = await env.key({ key_type: "organization", organization_id: "org-m", permissions: { view_all_usage: true } });
    const r = await env.api("GET", "/v1/api-keys", undefined, orgRo.secret);
    expect(r.status).toBe(403);
    expect(r.json.error.code).toBe("permission_denied");
    const user = await env.key();
    expect((await env.api("POST", "/v1/api-keys", { name: "x" }, user.secret)).status).toBe(403);
    expect((await env.api("GET", "/v1/api-keys", undefined, "sk-svc-bogus")).status).toBe(401);
  });
});

describe("manifest keys", () => {
  it("an ApiKey manifest with secretHash authenticates; it cannot be changed over HTTP", async () => {
    const secret = generateSecret();
    await env.apply([{ kind: "ApiKey", name: "ci-key", spec: { key_type: "user", secretHash: `sha256:${hashSecret(secret)}`, permissions: { models: ["gpt-x"] } } }]);
    const out = await env.client(secret).chat.completions.create({ model: "gpt-x", messages: msg() });
    expect(out.choices[0].message.content).toBe("echo: hi");
    const p = await env.api("PATCH", "/v1/api-keys/ci-key", { rate_limits: { per_minute: 1 } });
    expect(p.status).toBe(409);
    expect(p.json.error.message).toContain("config:test");
    expect((await env.api("DELETE", "/v1/api-keys/ci-key")).status).toBe(409);
    const one = await env.api("GET", "/v1/api-keys/ci-key");
    expect(one.json.managed_by).toBe("config:test");

    // a bound policy that does not exist: Ready=False PolicyNotFound, requests denied
    await env.apply([{ kind: "ApiKey", name: "ci-key", spec: { key_type: "user", secretHash: `sha256:${hashSecret(secret)}`, policies: ["later"] } }]);
    await until(() => env.svc.svc.store.get("ApiKey", "ci-key")?.status.conditions?.[0]?.reason === "PolicyNotFound");
    await expectError(env.client(secret).chat.completions.create({ model: "gpt-x", messages: msg() }), 403, "policy_denied");
    await env.apply([{ kind: "AccessPolicy", name: "later", spec: { version: "2024-01-01", statements: [{ effect: "Allow", actions: ["*"], resources: ["*"] }] } }]);
    await env.client(secret).chat.completions.create({ model: "gpt-x", messages: msg() });
  });
});
