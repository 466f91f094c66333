// Secrets stay out of what users export: GET /admin/config/export (YAML and JSON, API-owned
// objects included) and `svc config export` print references (env:, file:) and hashes, never a
// resolved credential, a header secret, an MCP token, a webhook secret given in clear, or a key.
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSvc, type TestSvc } from "../helpers/svc";
import { postJson } from "../helpers/http";
import { runCli } from "../helpers/cli";
import { DEAD_PORT } from "../helpers/services";

const rnd = () => randomBytes(8).toString("hex");
const CRED = `upstream-cred-${rnd()}`;
const HEADER = `org-header-${rnd()}`;
const MCP_TOKEN = `mcp-token-${rnd()}`;
const HOOK = `whsec_clear_${rnd()}`;

let s: TestSvc;
let admin: string;
let apiKey: string;
let secrets: string[];

beforeAll(async () => {
  process.env.EXPORT_TEST_CRED = CRED;
  process.env.EXPORT_TEST_MCP = MCP_TOKEN;
  s = await startTestSvc({ resyncMs: 0 });
  admin = readFileSync(path.join(s.home, "admin.key"), "utf8").trim();
  const headerFile = path.join(s.home, "org-header");
  writeFileSync(headerFile, HEADER + "\n");
  await s.svc.store.write([
    { op: "upsert", kind: "Provider", name: "up", owner: "config:test", spec: { type: "openai", baseUrl: `http://127.0.0.1:${DEAD_PORT}/v1`, credential: "env:EXPORT_TEST_CRED", headers: { "x-org": `file:${headerFile}` }, models: [{ name: "m" }] } },
    { op: "upsert", kind: "McpServer", name: "tools", owner: "config:test", spec: { transport: "http", url: `http://127.0.0.1:${DEAD_PORT}/mcp`, autoConnect: false, auth: { type: "token", token: "env:EXPORT_TEST_MCP" } } },
  ]);
  const k = await postJson(`${s.url}/v1/api-keys`, { name: "hooked", webhook: { enabled: true, url: `http://127.0.0.1:${DEAD_PORT}/hook`, events: ["key.revoked"], secret: HOOK } }, { authorization: `Bearer ${admin}` });
  expect(k.status).toBe(201);
  apiKey = k.json.api_key;
  secrets = [CRED, HEADER, MCP_TOKEN, HOOK, apiKey, admin];
});

afterAll(async () => {
  await s?.stop();
  delete process.env.EXPORT_TEST_CRED;
  delete process.env.EXPORT_TEST_MCP;
});

function expectNoSecrets(text: string, where: string) {
  for (const secret of secrets) expect(text, `${where} holds a secret`).not.toContain(secret);
}

describe("export without secrets", () => {
  it("GET /admin/config/export, YAML and JSON, API-owned objects included", async () => {
    for (const format of ["yaml", "json"]) {
      const r = await fetch(`${s.url}/admin/config/export?format=${format}&includeApiOwned=true`);
      expect(r.status).toBe(200);
      const text = await r.text();
      // what it holds: the objects, with their references
      expect(text).toContain("env:EXPORT_TEST_CRED");
      expect(text).toContain("env:EXPORT_TEST_MCP");
      expect(text).toContain("hooked");
      expectNoSecrets(text, `export ${format}`);
    }
  });

  it("svc config export (the running server's store), to stdout and to a file", async () => {
    const env = { SVC_HOME: s.home, SVC_PORT: String(s.port) };
    const out = await runCli(["config", "export", "--include-api-owned"], env);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toContain("env:EXPORT_TEST_CRED");
    expect(out.stdout).toContain("hooked");
    expectNoSecrets(out.stdout + out.stderr, "svc config export");
    const file = path.join(s.home, "export.json");
    const toFile = await runCli(["config", "export", "--include-api-owned", "-o", file], env);
    expect(toFile.code, toFile.stderr).toBe(0);
    const written = readFileSync(file, "utf8");
    expect(written).toContain("env:EXPORT_TEST_MCP");
    expectNoSecrets(written + toFile.stdout + toFile.stderr, "svc config export -o");
  });
});
