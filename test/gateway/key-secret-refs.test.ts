// Issue 38, item 4: a secret reference in a key request that does not resolve is refused with
// 400 naming it; a key whose reference stops resolving later is shown degraded in the API (the
// field the console reads), in `svc keys list`, and in one warn log line.
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSvc, type TestSvc } from "../helpers/svc";
import { postJson, until } from "../helpers/http";
import { repoRoot, runCli } from "../helpers/cli";

let s: TestSvc;
let admin: string;
const auth = () => ({ authorization: `Bearer ${admin}` });
const VAR = "SVC_TEST38_HOOK_SECRET";

beforeAll(async () => {
  delete process.env[VAR];
  delete process.env.SVC_WEBHOOK_SECRET;
  s = await startTestSvc();
  admin = readFileSync(path.join(s.home, "admin.key"), "utf8").trim();
});
afterAll(async () => {
  delete process.env[VAR];
  await s?.stop();
});

describe("secret references in key requests", () => {
  it("the docs' own example with SVC_WEBHOOK_SECRET unset is refused with 400 naming the reference", async () => {
    const body = JSON.parse(readFileSync(path.join(repoRoot, "examples/api/create-key.json"), "utf8"));
    delete body.policies; // the example names an AccessPolicy this store does not have
    const r = await postJson(`${s.url}/v1/api-keys`, body, auth());
    expect(r.status, r.text).toBe(400);
    expect(r.json.error).toMatchObject({ code: "invalid_request", param: "webhook.secret" });
    expect(r.json.error.message).toContain("env:SVC_WEBHOOK_SECRET");
    expect(r.json.error.message).toContain("SVC_WEBHOOK_SECRET is not set");
    expect(s.svc.store.list({ kind: "ApiKey" }).filter((o) => o.owner === "api")).toHaveLength(0);
  });

  it("PATCH naming an unresolvable file: reference is refused too", async () => {
    const made = await postJson(`${s.url}/v1/api-keys`, { name: "patched38" }, auth());
    expect(made.status, made.text).toBe(201);
    const res = await fetch(`${s.url}/v1/api-keys/${made.json.id}`, {
      method: "PATCH",
      headers: { ...auth(), "content-type": "application/json" },
      body: JSON.stringify({ webhook: { url: "http://127.0.0.1:9/hook", secret: "file:/nonexistent/svc-38-secret" } }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.message).toContain("file:/nonexistent/svc-38-secret");
  });

  it("a key whose reference stops resolving is degraded: API field, svc keys list, one warn line", async () => {
    process.env[VAR] = "whsec_38";
    const made = await postJson(`${s.url}/v1/api-keys`, { name: "hooked38", webhook: { url: "http://127.0.0.1:9/hook", secret: `env:${VAR}` } }, auth());
    expect(made.status, made.text).toBe(201);
    expect(made.json.webhook.secret_configured).toBe(true);
    expect(made.json.degraded).toBeNull();

    delete process.env[VAR];
    const got: any = await (await fetch(`${s.url}/v1/api-keys/${made.json.id}`, { headers: auth() })).json();
    expect(got.status).toBe("active"); // it still authenticates
    expect(got.webhook.secret_configured).toBe(false);
    expect(got.degraded).toMatchObject({ reason: "WebhookSecretMissing" });
    expect(got.degraded.message).toContain(`env:${VAR}`);
    const listed: any = await (await fetch(`${s.url}/v1/api-keys`, { headers: auth() })).json();
    expect(listed.keys.find((k: any) => k.id === made.json.id).degraded).toMatchObject({ reason: "WebhookSecretMissing" });

    const cli = await runCli(["keys", "list"], { SVC_HOME: s.home, SVC_PORT: String(s.port), SVC_ADMIN_KEY: undefined });
    expect(cli.code, cli.stderr).toBe(0);
    const line = cli.stdout.split("\n").find((l) => l.startsWith(made.json.id))!;
    expect(line).toContain("hooked38");
    expect(line).toContain("active (degraded: WebhookSecretMissing)");
    expect(cli.stderr).toContain(`env:${VAR}`);
    const asYaml = await runCli(["keys", "list", "-o", "yaml"], { SVC_HOME: s.home, SVC_PORT: String(s.port) });
    expect(asYaml.stdout).toContain("reason: WebhookSecretMissing");

    s.svc.control!.enqueue({ kind: "ApiKey", name: made.json.id });
    await until(() => s.logs.some((l) => l.level === "warn" && l.name === made.json.id && l.reason === "WebhookSecretMissing"));
    const warns = s.logs.filter((l) => l.level === "warn" && l.name === made.json.id);
    s.svc.control!.enqueue({ kind: "ApiKey", name: made.json.id }); // a second reconcile: no second line
    await new Promise((r) => setTimeout(r, 300));
    expect(s.logs.filter((l) => l.level === "warn" && l.name === made.json.id)).toHaveLength(warns.length);
    expect(warns).toHaveLength(1);
    expect(warns[0].message).toContain(`env:${VAR}`);
  });
});
