// One canonical form of a path, decided before any check or route match: every spelling of an
// admin path (case, //, trailing /, .., escaped letters) is the admin route for every check, so an
// allowed browser origin never gets CORS on it and its preflight is never answered; an escaped
// slash is no separator; a malformed escape is a 400.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { canonicalPath } from "../../api/canonical-path";
import { startTestSvc, type TestSvc } from "../helpers/svc";
import { until } from "../helpers/http";
import { raw } from "../fuzz/raw-request";
import { PairError, SecureSession } from "../../cli/pair-client";

const ALLOWED = "https://app.example";
const ADMIN_SPELLINGS = [
  "/admin/config/export",
  "/ADMIN/config/export",
  "/Admin/Config/Export",
  "//admin/config/export",
  "/admin//config///export",
  "/admin/config/export/",
  "/admin/config/export//",
  "/v1/../admin/config/export",
  "/v1/./../admin/./config/export",
  "/../../admin/config/export",
  "/%61dmin/config/export",
  "/admin/config/%65xport",
  "/v1/%2E%2E/admin/config/export",
  "/v1/%2e%2e/ADMIN/config/export/",
];

describe("canonicalPath", () => {
  it("maps every spelling to one form and keeps escaped slashes as data", () => {
    for (const p of ADMIN_SPELLINGS) expect(canonicalPath(p).toLowerCase(), p).toBe("/admin/config/export");
    expect(canonicalPath("/v1/models/org%2fname")).toBe("/v1/models/org%2Fname");
    expect(canonicalPath("/v1/models/Org-Name")).toBe("/v1/models/Org-Name");
    expect(canonicalPath("/")).toBe("/");
    expect(canonicalPath("//")).toBe("/");
    expect(() => canonicalPath("/v1/%zz")).toThrow(/percent-escape/);
    expect(() => canonicalPath("http://evil.example/admin")).toThrow(/absolute path/);
  });
});

describe("admin routes in every spelling", () => {
  let s: TestSvc;
  const local = () => ({ host: `127.0.0.1:${s.port}` });
  beforeAll(async () => {
    s = await startTestSvc({ resyncMs: 0 });
    await s.svc.store.write([{ op: "upsert", kind: "Server", name: "main", owner: "config:test", spec: { cors: { allowedOrigins: [ALLOWED] } } }]);
    await until(() => (s.svc.server.cors?.allowedOrigins ?? []).includes(ALLOWED), 10_000);
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
  });

  it("serves each spelling as the admin route to a loopback caller (one route, one set of checks)", async () => {
    for (const p of ADMIN_SPELLINGS) {
      const r = await raw(s.port, "GET", p, { headers: local() });
      expect(r.status, p).toBe(200);
      expect(r.text, p).toContain("apiVersion: svc/v1");
    }
  });

  it("never answers any spelling cross-origin: no CORS headers, no preflight 204, no config", async () => {
    for (const p of ADMIN_SPELLINGS) {
      const g = await raw(s.port, "GET", p, { headers: { ...local(), origin: ALLOWED } });
      expect(g.status, p).toBe(403);
      expect(g.headers["access-control-allow-origin"], p).toBeUndefined();
      expect(g.text, p).not.toContain("apiVersion");
      const pre = await raw(s.port, "OPTIONS", p, { headers: { ...local(), origin: ALLOWED, "access-control-request-method": "POST" } });
      expect(pre.status, p).toBe(403);
      expect(pre.headers["access-control-allow-origin"], p).toBeUndefined();
      expect(pre.headers["access-control-allow-methods"], p).toBeUndefined();
    }
    // a POST to apply, spelled otherwise, is refused the same way
    const before = s.svc.store.revision;
    const a = await raw(s.port, "POST", "/ADMIN/config/apply/", { headers: { ...local(), origin: ALLOWED }, body: { document: "apiVersion: svc/v1\nkind: Agent\nmetadata: {name: x}\nspec: {model: tiny}\n", confirm: true } });
    expect(a.status).toBe(403);
    expect(s.svc.store.revision).toBe(before);
  });

  it("takes an escaped slash as data, not a separator: no admin route behind it", async () => {
    for (const p of ["/admin%2Fconfig%2Fexport", "/admin%2fconfig/export", "/ADMIN%2FCONFIG%2FEXPORT"]) {
      const r = await raw(s.port, "GET", p, { headers: local() });
      expect(r.status, p).toBe(404);
      expect(r.json?.error?.code, p).toBe("not_found");
      expect(r.text).not.toContain("apiVersion");
    }
  });

  it("refuses a malformed escape or a non-path target with 400 before any route", async () => {
    for (const p of ["/admin/config/%zz", "/v1/chat/completions%", "/v1/%G0"]) {
      const r = await raw(s.port, "GET", p, { headers: local() });
      expect(r.status, p).toBe(400);
      expect(r.json?.error?.param, p).toBe("path");
    }
  });

  it("routes inference paths by the same canonical form, on the lean listener too", async () => {
    for (const p of ["/v1/chat/completions", "/V1/Chat/Completions", "/v1//chat/completions/", "/v1/x/../chat/completions"]) {
      const r = await raw(s.port, "POST", p, { headers: local(), body: { messages: [] } });
      expect(r.status, p).toBe(400); // the chat route's own validation, not 404 "no route"
      expect(r.json?.error?.code, p).toBe("invalid_request");
    }
  });

  it("refuses every spelling of an admin path through the secure channel", async () => {
    const ses = await SecureSession.open(s.url, s.svc.engines.pairing!.server().public_key);
    for (const p of ["/ADMIN/config/status", "/v1/../admin/config/export", "/%61dmin/config/export", "/admin/config/export/"]) {
      const err = await ses.call({ method: "GET", path: p }).then(() => undefined, (e) => e);
      expect(err, p).toBeInstanceOf(PairError);
      expect([err.status, err.code], p).toEqual([403, "permission_denied"]);
    }
    const ok = await ses.call({ method: "GET", path: "/V1/models/" });
    expect(ok.status).toBe(200);
  });
});
