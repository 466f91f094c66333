// No secrets in URLs: an McpServer url, a Provider baseUrl or a webhook url carrying a credential
// (user:password@, or a query parameter named like one) is refused at validation, plan and apply
// and by POST /v1/api-keys, naming the secure field to use instead and never repeating the value.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import path from "node:path";
import { writeFile } from "node:fs/promises";
import { isCredentialParam, urlCredentialProblem } from "../../manifests/url-credentials";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";
import { postJson } from "../helpers/http";
import { runCli } from "../helpers/cli";

const TOKEN = "tok-7c1d9e2f4a8b";

describe("the rule", () => {
  it("flags credential-looking parameter names and userinfo, and leaves ordinary parameters alone", () => {
    for (const n of ["token", "access_token", "accessToken", "api_key", "api-key", "apikey", "key", "X-Amz-Signature", "sig", "secret", "client_secret", "password", "auth", "code", "subscription-key", "jwt"]) {
      expect(isCredentialParam(n), n).toBe(true);
    }
    for (const n of ["api-version", "model", "page", "region", "keyword", "version", "format"]) expect(isCredentialParam(n), n).toBe(false);
    expect(urlCredentialProblem("https://api.example.com/openai?api-version=2024-02-01", "credential")).toBeUndefined();
    expect(urlCredentialProblem(`https://h.example.com/mcp?token=${TOKEN}`, "auth.token")).toMatch(/parameter "token".*auth\.token/);
    expect(urlCredentialProblem("https://user:pw@h.example.com/mcp", "auth.token")).toMatch(/user:password@/);
    expect(urlCredentialProblem(`https://h.example.com/mcp?token=${TOKEN}`, "auth.token")).not.toContain(TOKEN);
  });
});

describe("validate, plan, apply and key creation", () => {
  let s: TestSvc;
  let dir: string;
  const mcp = (url: string) => ({ apiVersion: "svc/v1", kind: "McpServer", metadata: { name: "tokenized" }, spec: { transport: "http", url } });
  const provider = (baseUrl: string) => ({ apiVersion: "svc/v1", kind: "Provider", metadata: { name: "keyed" }, spec: { type: "openai", baseUrl } });
  const apiKey = (url: string) => ({
    apiVersion: "svc/v1",
    kind: "ApiKey",
    metadata: { name: "hooked" },
    spec: { name: "hooked", secretHash: `sha256:${"a".repeat(64)}`, webhook: { url, events: ["key.revoked"] } },
  });
  const cases = [
    { doc: mcp(`https://tools.example.com/mcp?token=${TOKEN}`), path: "/spec/url", instead: /auth\.token/ },
    { doc: mcp(`https://bob:${TOKEN}@tools.example.com/mcp`), path: "/spec/url", instead: /auth\.token/ },
    { doc: provider(`https://llm.example.com/v1?api_key=${TOKEN}`), path: "/spec/baseUrl", instead: /credential \(Authorization\) or headers/ },
    { doc: apiKey(`https://hooks.example.com/in?sig=${TOKEN}`), path: "/spec/webhook/url", instead: /webhook\.secret/ },
  ];

  beforeAll(async () => {
    s = await startTestSvc();
    dir = await tempDir("svc-urlcred-");
  });
  afterAll(async () => {
    await s?.stop();
  });

  it("svc config validate exits 1 naming the field and the secure field instead, without the value", async () => {
    for (const [i, c] of cases.entries()) {
      const f = path.join(dir, `case${i}.json`);
      await writeFile(f, JSON.stringify(c.doc));
      const r = await runCli(["config", "validate", f], { SVC_HOME: s.home, SVC_PORT: String(s.port) });
      expect(r.code, r.stdout + r.stderr).toBe(1);
      expect(r.stderr).toContain(c.path);
      expect(r.stderr).toMatch(c.instead);
      expect(r.stdout + r.stderr).not.toContain(TOKEN);
    }
  });

  it("plan and apply refuse them; nothing is stored", async () => {
    for (const c of cases) {
      for (const route of ["plan", "apply"]) {
        const r = await postJson(`${s.url}/admin/config/${route}`, { documents: [c.doc], source: "urlcred", confirm: true });
        expect(r.status, `${route} ${c.path}: ${r.text}`).toBe(422);
        expect(r.json.error.code).toBe("invalid_manifest");
        expect(r.text).toContain(c.path);
        expect(r.text).toMatch(c.instead);
        expect(r.text).not.toContain(TOKEN);
      }
    }
    expect(s.svc.store.get("McpServer", "tokenized")).toBeUndefined();
    expect(s.svc.store.get("Provider", "keyed")).toBeUndefined();
    expect(s.svc.store.get("ApiKey", "hooked")).toBeUndefined();
    // the same objects without credentials in their URLs are accepted
    const ok = await postJson(`${s.url}/admin/config/plan`, { documents: [mcp("https://tools.example.com/mcp"), provider("https://llm.example.com/v1?api-version=2024-02-01")], source: "urlcred" });
    expect(ok.status, ok.text).toBe(200);
  });

  it("POST /v1/api-keys refuses a webhook url with a credential in it (400 naming webhook.url)", async () => {
    const { readFileSync } = await import("node:fs");
    const admin = readFileSync(path.join(s.home, "admin.key"), "utf8").trim();
    for (const url of [`https://hooks.example.com/in?access_token=${TOKEN}`, `https://u:${TOKEN}@hooks.example.com/in`]) {
      const r = await postJson(`${s.url}/v1/api-keys`, { name: "hooked", webhook: { url, events: ["key.revoked"] } }, { authorization: `Bearer ${admin}` });
      expect(r.status, r.text).toBe(400);
      expect(r.json.error).toMatchObject({ code: "invalid_request", param: "webhook.url" });
      expect(r.json.error.message).toMatch(/webhook\.secret/);
      expect(r.text).not.toContain(TOKEN);
    }
  });
});
