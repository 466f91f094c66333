// access_level on keys (spec/gateway.md dashboard levels), through HTTP with the official SDK:
// read_only lists models and reads usage and audit, and is refused inference and writes with
// 403 permission_denied naming the level; full and custom (the default) behave as before.
import { describe, it, expect, afterAll, beforeAll } from "vitest";
import { startEnv, standIn, provider, expectError, type Env, type StandIn } from "./fixtures";
import { accessRefusal } from "../../engines/gateway/access-level";

let env: Env;
let up: StandIn;

beforeAll(async () => {
  up = await standIn();
  env = await startEnv();
  await env.apply([provider("up", up, [{ name: "gpt-x" }])]);
});
afterAll(async () => {
  await env?.stop();
  await up?.close();
});

const hi = [{ role: "user" as const, content: "hi" }];

describe("access_level", () => {
  it("is custom by default, shown on create, get and list, and changed with PATCH", async () => {
    const made = await env.createKey({ name: "plain" });
    expect(made.json.access_level).toBe("custom");
    const ro = await env.createKey({ name: "viewer", access_level: "read_only" });
    expect(ro.status).toBe(201);
    expect(ro.json.access_level).toBe("read_only");
    const list = await env.api("GET", "/v1/api-keys");
    expect(list.json.keys.find((k: any) => k.id === ro.json.id).access_level).toBe("read_only");
    const p = await env.api("PATCH", `/v1/api-keys/${made.json.id}`, { access_level: "full" });
    expect(p.status).toBe(200);
    expect(p.json.access_level).toBe("full");
    const bad = await env.createKey({ access_level: "admin" });
    expect(bad.status).toBe(400);
    expect(bad.json.error.param).toBe("access_level");
  });

  it("read_only lists models and reads usage and its audit log, but runs no inference", async () => {
    const k = await env.key({ name: "ro", access_level: "read_only" });
    const client = env.client(k.secret, { maxRetries: 0 });
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toContain("gpt-x");
    const e = await expectError(client.chat.completions.create({ model: "gpt-x", messages: hi }), 403, "permission_denied");
    expect(e.message).toContain("read_only");
    const emb = await expectError(client.embeddings.create({ model: "gpt-x", input: "x" }), 403, "permission_denied");
    expect(emb.message).toContain("read_only");
    const usage = await env.api("GET", "/v1/usage?group_by=key", undefined, k.secret);
    expect(usage.status).toBe(200);
    const audit = await env.api("GET", "/v1/audit-logs", undefined, k.secret);
    expect(audit.status).toBe(200); // issue 38: without X-API-Key-ID a key reads its own log (was 400)
    const own = await fetch(`${env.url}/v1/audit-logs`, { headers: { authorization: `Bearer ${k.secret}`, "x-api-key-id": k.id } });
    expect(own.status).toBe(200);
    const entries = ((await own.json()) as { data: Array<{ action: string; status: string }> }).data;
    // the refused inference is in its log, with the refusal's code
    expect(entries.some((x) => x.action === "chat.completions" && x.status === "permission_denied")).toBe(true);
  });

  it("read_only cannot create, change or revoke keys, even with manage_keys", async () => {
    const k = await env.key({ name: "ro-org", key_type: "organization", organization_id: "org-r", access_level: "read_only", permissions: { manage_keys: true } });
    const create = await env.createKey({ name: "child", key_type: "user" }, k.secret);
    expect(create.status).toBe(403);
    expect(create.json.error).toMatchObject({ code: "permission_denied", type: expect.any(String) });
    expect(create.json.error.message).toContain("read_only");
    const child = await env.key({ name: "child", organization_id: "org-r" });
    const patch = await env.api("PATCH", `/v1/api-keys/${child.id}`, { name: "renamed" }, k.secret);
    expect(patch.status).toBe(403);
    expect(patch.json.error.message).toContain("read_only");
    const del = await env.api("DELETE", `/v1/api-keys/${child.id}`, undefined, k.secret);
    expect(del.status).toBe(403);
    // the child key still works: nothing was changed
    const out = await env.client(child.secret).chat.completions.create({ model: "gpt-x", messages: hi });
    expect(out.choices[0].message.content).toBe("echo: hi");
  });

  it("read_only is refused on routes outside the pipeline (memory)", async () => {
    const k = await env.key({ name: "ro-mem", access_level: "read_only" });
    const r = await env.api("GET", "/memory/status?agent_id=a", undefined, k.secret);
    expect(r.status).toBe(403);
    expect(r.json.error.code).toBe("permission_denied");
    expect(r.json.error.message).toContain("read_only");
  });

  it("full and custom keys run inference as before", async () => {
    for (const level of ["full", "custom"]) {
      const k = await env.key({ name: level, access_level: level });
      const out = await env.client(k.secret).chat.completions.create({ model: "gpt-x", messages: hi });
      expect(out.choices[0].message.content).toBe("echo: hi");
    }
  });

  it("a manifest ApiKey carries access_level too", async () => {
    const { hashSecret, generateSecret } = await import("../../engines/gateway/keys");
    const secret = generateSecret();
    await env.apply([{ kind: "ApiKey", name: "manifest-viewer", spec: { access_level: "read_only", key_type: "user", secretHash: `sha256:${hashSecret(secret)}` } }]);
    await expectError(env.client(secret, { maxRetries: 0 }).chat.completions.create({ model: "gpt-x", messages: hi }), 403, "permission_denied");
    const got = await env.api("GET", "/v1/api-keys/manifest-viewer");
    expect(got.json).toMatchObject({ access_level: "read_only", managed_by: "config:test" });
  });

  it("the rule: the administrative key is full; only read_only refuses, and says so", () => {
    expect(accessRefusal({ role: "admin", spec: { access_level: "read_only" } }, "keys:write")).toBeNull();
    expect(accessRefusal({ role: "key", spec: {} }, "inference")).toBeNull();
    expect(accessRefusal({ role: "key", spec: { access_level: "read_only" } }, "usage:read")).toBeNull();
    expect(accessRefusal({ role: "key", spec: { access_level: "read_only" } }, "keys:write")).toMatch(/read_only.*create, change or revoke/);
    expect(accessRefusal(null, "inference")).toBeNull();
  });
});
