// Scope isolation of the response cache (docs/cache.md "Scope"): "a cache never answers a caller
// across its scope: a key never gets another organization's answer". Organization and team ids
// are free strings (a ':' included), and a manifest ApiKey may be named like the administrative
// key's id ("admin"): neither may make two callers of different scopes share an entry.
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { provider, standIn, startEnv, type Env, type StandIn } from "../gateway/fixtures";

let env: Env;
let up: StandIn;

beforeAll(async () => {
  up = await standIn();
  env = await startEnv();
  await env.apply([
    provider("up", up, [
      { name: "gpt-team", inputPerMillion: 1, outputPerMillion: 1, cache: { scope: "team" } } as any,
      { name: "gpt-key", inputPerMillion: 1, outputPerMillion: 1, cache: { scope: "key" } } as any,
    ]),
  ]);
});

afterAll(async () => {
  await env?.stop();
  await up?.close();
});

const ask = (secret: string, model: string, text: string) => env.client(secret).chat.completions.create({ model, messages: [{ role: "user", content: text }] }).withResponse();
const calls = (model: string) => up.requests.filter((r) => r.body.model === model).length;

describe("response cache scope isolation", () => {
  it("scope team: team y of organization 'acme:x' never answers team 'x:y' of organization 'acme'", async () => {
    const a = await env.key({ key_type: "team", organization_id: "acme:x", team_id: "y" });
    const b = await env.key({ key_type: "team", organization_id: "acme", team_id: "x:y" });
    expect((await ask(a.secret, "gpt-team", "team secret")).response.headers.get("x-svc-cache")).toBe("miss");
    const other = await ask(b.secret, "gpt-team", "team secret");
    expect(other.response.headers.get("x-svc-cache")).toBe("miss");
    expect(calls("gpt-team")).toBe(2);
    // the same team still shares its answers
    const a2 = await env.key({ key_type: "user", organization_id: "acme:x", team_id: "y", user_id: "u" });
    expect((await ask(a2.secret, "gpt-team", "team secret")).response.headers.get("x-svc-cache")).toBe("hit");
  });

  it("scope key: a manifest ApiKey named 'admin' never gets the administrative key's answers", async () => {
    const secret = "sk-svc-manifestkeynamedadmin0000000000000000";
    const secretHash = `sha256:${createHash("sha256").update(secret).digest("hex")}`;
    await env.apply([{ kind: "ApiKey", name: "admin", spec: { secretHash } }]);
    expect((await ask(env.adminKey, "gpt-key", "operator only")).response.headers.get("x-svc-cache")).toBe("miss");
    const r = await ask(secret, "gpt-key", "operator only");
    expect(r.response.status).toBe(200);
    expect(r.response.headers.get("x-svc-cache")).toBe("miss");
    expect(calls("gpt-key")).toBe(2);
  });
});
