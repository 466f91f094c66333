// Browser origins: CORS headers and answered preflights only for Server.spec.cors.allowedOrigins;
// other cross-origin requests get no CORS headers and are refused; admin never gets CORS.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSvc, type TestSvc } from "../helpers/svc";
import { until } from "../helpers/http";

describe("CORS", () => {
  let s: TestSvc;
  const ALLOWED = "https://app.example";
  beforeAll(async () => {
    s = await startTestSvc({});
    await s.svc.store.write([{ op: "upsert", kind: "Server", name: "main", owner: "config:test", spec: { cors: { allowedOrigins: [ALLOWED] } } }]);
    await until(() => (s.svc.server.cors?.allowedOrigins ?? []).includes(ALLOWED), 10_000);
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
  });

  it("answers a preflight from an allowed origin, with the asked headers", async () => {
    const r = await fetch(`${s.url}/v1/chat/completions`, { method: "OPTIONS", headers: { origin: ALLOWED, "access-control-request-method": "POST", "access-control-request-headers": "authorization, content-type" } });
    expect(r.status).toBe(204);
    expect(r.headers.get("access-control-allow-origin")).toBe(ALLOWED);
    expect(r.headers.get("access-control-allow-methods")).toContain("POST");
    expect(r.headers.get("access-control-allow-headers")).toBe("authorization, content-type");
    expect(r.headers.get("access-control-allow-credentials")).toBeNull();
  });

  it("adds CORS headers to an allowed origin's request, on the Koa routes and the inference routes", async () => {
    const h = await fetch(`${s.url}/health`, { headers: { origin: ALLOWED } });
    expect(h.status).toBe(200);
    expect(h.headers.get("access-control-allow-origin")).toBe(ALLOWED);
    expect(h.headers.get("vary")).toContain("Origin");
    const c = await fetch(`${s.url}/v1/chat/completions`, { method: "POST", headers: { origin: ALLOWED, "content-type": "application/json" }, body: JSON.stringify({ model: "none", messages: [{ role: "user", content: "hi" }] }) });
    expect(c.status).toBe(404);
    expect(c.headers.get("access-control-allow-origin")).toBe(ALLOWED);
    expect(c.headers.get("access-control-expose-headers")).toContain("x-request-id");
  });

  it("refuses other origins without CORS headers, preflight or not", async () => {
    const pre = await fetch(`${s.url}/v1/chat/completions`, { method: "OPTIONS", headers: { origin: "https://evil.example", "access-control-request-method": "POST" } });
    expect(pre.status).toBe(403);
    expect(pre.headers.get("access-control-allow-origin")).toBeNull();
    // a "simple" cross-origin POST (no preflight in a browser) is refused before any route runs
    const post = await fetch(`${s.url}/v1/chat/completions`, { method: "POST", headers: { origin: "https://evil.example", "content-type": "text/plain" }, body: "{}" });
    expect(post.status).toBe(403);
    expect(post.headers.get("access-control-allow-origin")).toBeNull();
    expect(((await post.json()) as any).error).toMatchObject({ code: "permission_denied", param: "origin" });
    const sub = await fetch(`${s.url}/health`, { headers: { origin: "https://app.example.evil" } });
    expect(sub.status).toBe(403);
  });

  it("never gives admin routes CORS, even to an allowed origin", async () => {
    const r = await fetch(`${s.url}/admin/config/status`, { headers: { origin: ALLOWED } });
    expect(r.status).toBe(403);
    expect(r.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("leaves requests without Origin and same-origin requests alone", async () => {
    expect((await fetch(`${s.url}/health`)).headers.get("access-control-allow-origin")).toBeNull();
    const same = await fetch(`${s.url}/health`, { headers: { origin: s.url } });
    expect(same.status).toBe(200);
    expect(same.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("rejects a wildcard or a path in allowedOrigins at validation", async () => {
    const r = await fetch(`${s.url}/admin/config/plan`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ document: "apiVersion: svc/v1\nkind: Server\nmetadata: {name: main}\nspec: {cors: {allowedOrigins: ['*']}}\n" }),
    });
    expect(r.status).toBe(422);
  });
});
