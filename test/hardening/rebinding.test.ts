// DNS rebinding: a page at evil.example whose name is rebound to 127.0.0.1 reaches svc from the
// loopback socket, and its browser sends `Host: evil.example:<port>` and `Origin:
// http://evil.example:<port>`. Every route family that trusts loopback must refuse it before any
// route runs; loopback names keep working; a request with a valid key works from any Host.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";
import { until } from "../helpers/http";
import { raw } from "../fuzz/raw-request";
import { hostnameOf, isLoopbackName, isLoopbackOrigin } from "../../api/host-guard";

const EVIL = (port: number) => ({ host: `evil.example:${port}`, origin: `http://evil.example:${port}` });

// One or more routes of every family: admin, inference (lean listener and Koa), models, agents,
// tasks, memory, pairing, secure channel, media, tools and /mcp, keys, metrics, health.
const ROUTES: Array<[string, string, unknown?]> = [
  ["GET", "/admin/config/export"],
  ["GET", "/admin/config/status"],
  ["GET", "/admin/config/schema"],
  ["POST", "/admin/config/plan", { document: "" }],
  ["GET", "/admin/runtime-settings"],
  ["POST", "/v1/chat/completions", { model: "tiny", messages: [{ role: "user", content: "hi" }] }],
  ["POST", "/v1/completions", { model: "tiny", prompt: "hi" }],
  ["POST", "/v1/messages", { model: "tiny", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }],
  ["POST", "/v1/embeddings", { model: "tiny", input: "hi" }],
  ["POST", "/api/chat", { model: "tiny", messages: [{ role: "user", content: "hi" }] }],
  ["POST", "/api/generate", { model: "tiny", prompt: "hi" }],
  ["GET", "/api/tags"],
  ["GET", "/v1/models"],
  ["GET", "/agents"],
  ["POST", "/agents/helper/run", { input: "hi" }],
  ["POST", "/agents/helper/dispatch", { input: "hi" }],
  ["GET", "/tasks/t1"],
  ["GET", "/memory/status"],
  ["POST", "/memory/ingest", { agent: "a", text: "x" }],
  ["GET", "/pair/requests"],
  ["POST", "/pair/code", {}],
  ["POST", "/pair-invite", {}],
  ["POST", "/secure/session", {}],
  ["POST", "/v1/images/generations", { prompt: "x" }],
  ["POST", "/v1/images/cancel", { id: "x" }],
  ["GET", "/v1/videos/jobs/x"],
  ["GET", "/mcp/tools"],
  ["POST", "/mcp/call", { name: "x", arguments: {} }],
  ["POST", "/mcp", { jsonrpc: "2.0", id: 1, method: "initialize", params: {} }],
  ["GET", "/v1/api-keys"],
  ["GET", "/metrics"],
  ["GET", "/health"],
];

describe("loopback names", () => {
  it("knows loopback names from names that only look like them", () => {
    for (const h of ["localhost", "localhost:1337", "LOCALHOST.", "app.localhost:9", "127.0.0.1", "127.255.0.9:80", "[::1]:1337", "[0:0:0:0:0:0:0:1]", "[::ffff:127.0.0.1]:5"]) {
      expect(isLoopbackName(hostnameOf(h)), h).toBe(true);
    }
    for (const h of ["evil.example", "127.0.0.1.evil.example", "localhost.evil.example", "evil-localhost", "128.0.0.1", "127.0.0.256", "0.0.0.0", "[::]", "[fe80::1]", "10.0.0.1:1337", ""]) {
      expect(isLoopbackName(hostnameOf(h)), h).toBe(false);
    }
    expect(isLoopbackOrigin("http://localhost:1337")).toBe(true);
    expect(isLoopbackOrigin("https://[::1]")).toBe(true);
    for (const o of ["null", "http://evil.example", "http://127.0.0.1.evil.example:1", "file://", "chrome-extension://abc"]) expect(isLoopbackOrigin(o), o).toBe(false);
  });
});

describe("DNS rebinding: the Host rule", () => {
  let s: TestSvc;
  let adminKey: string;
  let marker: string;
  beforeAll(async () => {
    s = await startTestSvc({ resyncMs: 0 });
    adminKey = readFileSync(path.join(s.home, "admin.key"), "utf8").trim();
    marker = path.join(await tempDir("svc-rebind-"), "pwned");
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
  });

  it("refuses every route family for a rebound Host and Origin, before any route runs", async () => {
    for (const [method, p, body] of ROUTES) {
      const r = await raw(s.port, method, p, { headers: EVIL(s.port), body });
      expect(r.status, `${method} ${p}`).toBe(403);
      expect(r.json?.error?.code, `${method} ${p}`).toBe("permission_denied");
      expect(r.json.error.message).toContain("evil.example");
      expect(r.json.error.message).toContain("allowedHosts");
      expect(r.headers["access-control-allow-origin"]).toBeUndefined();
    }
  });

  it("refuses the rebound Host without an Origin too (a form post or an image tag sends none)", async () => {
    for (const [method, p, body] of ROUTES) {
      const r = await raw(s.port, method, p, { headers: { host: `evil.example:${s.port}` }, body });
      expect(r.status, `${method} ${p}`).toBe(403);
    }
  });

  it("refuses other spellings of the path and SDK placeholder keys from a rebound Host", async () => {
    for (const p of ["/ADMIN/config/export", "//admin//config/export/", "/v1/../admin/config/export", "/%61dmin/config/export"]) {
      expect((await raw(s.port, "GET", p, { headers: EVIL(s.port) })).status, p).toBe(403);
    }
    // "none" is served anonymously on loopback: it is no key, so the Host rule applies
    const r = await raw(s.port, "POST", "/v1/chat/completions", { headers: { ...EVIL(s.port), authorization: "Bearer none" }, body: { model: "tiny", messages: [] } });
    expect(r.status).toBe(403);
    const bad = await raw(s.port, "GET", "/v1/models", { headers: { ...EVIL(s.port), authorization: "Bearer sk-svc-notakey" } });
    expect(bad.status).toBe(403);
  });

  it("does not apply config from a rebound page: the store is unchanged and no command runs", async () => {
    const doc = [
      "apiVersion: svc/v1",
      "kind: McpServer",
      "metadata: {name: pwn}",
      "spec:",
      "  transport: stdio",
      `  command: ${JSON.stringify(process.execPath)}`,
      `  args: ["-e", ${JSON.stringify(`require("fs").writeFileSync(${JSON.stringify(marker)}, "x")`)}]`,
      "",
    ].join("\n");
    // the document is valid: a loopback caller's plan would create it
    const plan = await raw(s.port, "POST", "/admin/config/plan", { headers: { host: `127.0.0.1:${s.port}` }, body: { document: doc } });
    expect(plan.status).toBe(200);
    expect(plan.json.plan.summary.create).toBe(1);
    const before = s.svc.store.revision;
    const r = await raw(s.port, "POST", "/admin/config/apply", { headers: EVIL(s.port), body: { document: doc, confirm: true } });
    expect(r.status).toBe(403);
    expect(s.svc.store.revision).toBe(before);
    expect(s.svc.store.list({ kind: "McpServer" })).toHaveLength(0);
    // a valid key does not open administration to a foreign Host either
    const keyed = await raw(s.port, "POST", "/admin/config/apply", { headers: { ...EVIL(s.port), authorization: `Bearer ${adminKey}` }, body: { document: doc, confirm: true } });
    expect(keyed.status).toBe(403);
    expect(s.svc.store.list({ kind: "McpServer" })).toHaveLength(0);
    expect(existsSync(marker)).toBe(false);
  });

  it("refuses a foreign Origin on admin routes even with a loopback Host", async () => {
    for (const origin of [`http://evil.example:${s.port}`, "null", "https://app.example"]) {
      const r = await raw(s.port, "GET", "/admin/config/export", { headers: { host: `127.0.0.1:${s.port}`, origin } });
      expect(r.status, origin).toBe(403);
      expect(r.json.error.param).toBe("origin");
    }
  });

  it("keeps serving loopback names, any port, with or without a loopback Origin", async () => {
    for (const host of [`localhost:${s.port}`, `127.0.0.1:${s.port}`, "127.5.6.7:1", `[::1]:${s.port}`, "LOCALHOST", "app.localhost:9"]) {
      const h = await raw(s.port, "GET", "/health", { headers: { host } });
      expect(h.status, host).toBe(200);
      const m = await raw(s.port, "GET", "/v1/models", { headers: { host } });
      expect(m.status, host).toBe(200);
      const e = await raw(s.port, "GET", "/admin/config/status", { headers: { host, origin: `http://${host}` } });
      expect(e.status, host).toBe(200);
    }
  });

  it("serves a request with a valid key from any Host", async () => {
    const r = await raw(s.port, "GET", "/v1/models", { headers: { ...EVIL(s.port), authorization: `Bearer ${adminKey}` } });
    expect(r.status).toBe(200);
    expect(Array.isArray(r.json.data)).toBe(true);
    const k = await raw(s.port, "GET", "/v1/api-keys", { headers: { host: "svc.example.com", authorization: `Bearer ${adminKey}` } });
    expect(k.status).toBe(200);
  });

  it("serves names listed in the Server manifest's allowedHosts, and admin still wants a loopback Origin", async () => {
    expect((await raw(s.port, "GET", "/v1/models", { headers: { host: "svc.internal:8080" } })).status).toBe(403);
    await s.svc.store.write([{ op: "upsert", kind: "Server", name: "main", owner: "config:test", spec: { allowedHosts: ["svc.internal", "*.proxy.test"] } }]);
    await until(() => (s.svc.server.allowedHosts ?? []).includes("svc.internal"), 10_000);
    for (const host of ["svc.internal:8080", "SVC.internal", "a.proxy.test"]) {
      expect((await raw(s.port, "GET", "/v1/models", { headers: { host } })).status, host).toBe(200);
    }
    expect((await raw(s.port, "GET", "/v1/models", { headers: { host: "proxy.test" } })).status).toBe(403);
    expect((await raw(s.port, "GET", "/admin/config/status", { headers: { host: "svc.internal" } })).status).toBe(200);
    expect((await raw(s.port, "GET", "/admin/config/status", { headers: { host: "svc.internal", origin: "http://svc.internal" } })).status).toBe(403);
  });

  it("rejects a malformed allowedHosts entry at validation", async () => {
    const r = await raw(s.port, "POST", "/admin/config/plan", { headers: { host: "localhost" }, body: { document: "apiVersion: svc/v1\nkind: Server\nmetadata: {name: main}\nspec: {allowedHosts: ['http://x/']}\n" } });
    expect(r.status).toBe(422);
  });
});
