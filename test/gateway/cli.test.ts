// `svc keys generate` prints a secret and its hash; a manifest with that hash authenticates.
// `svc keys list` / `svc keys revoke` talk to the running server with the administrative key.
import { describe, it, expect, afterAll, beforeAll } from "vitest";
import { runCli } from "../helpers/cli";
import { hashSecret } from "../../engines/gateway/keys";
import { startEnv, standIn, provider, expectError, type Env, type StandIn } from "./fixtures";

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

describe("svc keys", () => {
  it("generate prints a secret and its sha256 hash, usable in an ApiKey manifest", async () => {
    const r = await runCli(["keys", "generate", "--json"]);
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.api_key).toMatch(/^sk-svc-[0-9A-Za-z]{43}$/);
    expect(j.secretHash).toBe(`sha256:${hashSecret(j.api_key)}`);
    await env.apply([{ kind: "ApiKey", name: "from-cli", spec: { key_type: "user", secretHash: j.secretHash } }]);
    const out = await env.client(j.api_key).chat.completions.create({ model: "gpt-x", messages: [{ role: "user", content: "hi" }] });
    expect(out.choices[0].message.content).toBe("echo: hi");

    const text = await runCli(["keys", "generate", "--name", "ci"]);
    expect(text.stdout).toContain("kind: ApiKey");
    expect(text.stdout).toMatch(/secretHash: sha256:[0-9a-f]{64}/);
  });

  it("list and revoke use the administrative key from the data dir", async () => {
    const k = await env.key({ name: "cli-listed" });
    const envVars = { SVC_ADMIN_KEY: undefined, SVC_PORT: undefined };
    const list = await runCli(["keys", "list", "--home", env.home, "--port", String(env.svc.port)], envVars);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toContain(k.id);
    expect(list.stdout).toContain("cli-listed");
    expect(list.stdout).not.toContain(k.secret);
    const rev = await runCli(["keys", "revoke", k.id, "--home", env.home, "--port", String(env.svc.port)], envVars);
    expect(rev.code, rev.stderr).toBe(0);
    expect(rev.stdout).toContain("revoked");
    await expectError(env.client(k.secret).chat.completions.create({ model: "gpt-x", messages: [{ role: "user", content: "hi" }] }), 401, "key_revoked");
  });
});
