// Timestamps svc takes are normalised to UTC and returned with "Z", whatever offset they came with:
// a key's expires_at on create and PATCH, and an ApiKey manifest's as the API shows it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEnv, type Env } from "./fixtures";

let env: Env;
beforeAll(async () => {
  env = await startEnv();
});
afterAll(async () => {
  await env?.stop();
});

describe("UTC timestamps", () => {
  it("a key's expires_at given with an offset is stored and returned in UTC", async () => {
    const made = await env.api("POST", "/v1/api-keys", { name: "offset", expires_at: "2030-01-01T02:00:00+02:00" });
    expect(made.status).toBe(201);
    expect(made.json.expires_at).toBe("2030-01-01T00:00:00Z");
    const got = await env.api("GET", `/v1/api-keys/${made.json.id}`);
    expect(got.json.expires_at).toBe("2030-01-01T00:00:00Z");
    expect(env.svc.svc.store.get("ApiKey", made.json.id)?.spec.expires_at).toBe("2030-01-01T00:00:00Z");
    const patched = await env.api("PATCH", `/v1/api-keys/${made.json.id}`, { expires_at: "2031-06-30T19:30:00.250-05:00" });
    expect(patched.status).toBe(200);
    expect(patched.json.expires_at).toBe("2031-07-01T00:30:00.250Z");
  });

  it("an ApiKey manifest's expires_at is shown in UTC", async () => {
    await env.apply([{ kind: "ApiKey", name: "manifest-offset", spec: { name: "manifest offset", secretHash: `sha256:${"a".repeat(64)}`, expires_at: "2030-05-01T09:00:00+09:00" } }]);
    const got = await env.api("GET", "/v1/api-keys/manifest-offset");
    expect(got.status).toBe(200);
    expect(got.json.expires_at).toBe("2030-05-01T00:00:00Z");
  });
});
