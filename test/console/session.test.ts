// The console's HTTP side: static files with a strict CSP and a small gzip weight, sign-in to an
// HttpOnly SameSite=Strict session cookie that never carries the key, CSRF on writes, loopback
// sign-in only where the Server allows unauthenticated loopback, sessions that end with the key.
import { describe, it, expect, afterAll, beforeAll } from "vitest";
import { request } from "node:http";
import { startEnv, standIn, provider, type Env, type StandIn } from "../gateway/fixtures";

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

const signIn = async (key: string, headers: Record<string, string> = {}) => {
  const res = await fetch(`${env.url}/console/session`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify({ api_key: key }) });
  return { res, cookie: (res.headers.get("set-cookie") ?? "").split(";")[0] };
};
const session = async (cookie: string) => {
  const res = await fetch(`${env.url}/console/session`, { headers: { cookie } });
  return { status: res.status, json: (await res.json()) as any };
};

/** fetch cannot set Host: node:http can. Resolves with the status. */
function postWithHost(p: string, host: string): Promise<number> {
  const u = new URL(env.url);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: p, method: "POST", headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end();
  });
}

describe("console files", () => {
  it("serves the page and its modules with a strict CSP, no inline script, under 250 KB gzipped", async () => {
    const index = await fetch(`${env.url}/console/`);
    expect(index.status).toBe(200);
    const csp = index.headers.get("content-security-policy")!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("unsafe-inline");
    expect(csp).toContain("frame-ancestors 'none'");
    const html = await index.text();
    // every script is a file from this origin
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/https?:\/\//);
    const files = ["/console/", "/console/app.js", "/console/style.css", "/console/lib/api.js", "/console/lib/ui.js", "/console/vendor/preact-htm.js", "/console/vendor/uplot.js", "/console/vendor/uplot.css",
      ...["overview", "keys", "usage", "audit", "config", "agents", "mcp", "models", "memory"].map((p) => `/console/pages/${p}.js`)];
    let bytes = 0;
    for (const f of files) {
      const res = await fetch(`${env.url}${f}`, { headers: { "accept-encoding": "gzip" }, decompress: false } as RequestInit);
      expect(res.status, f).toBe(200);
      expect(res.headers.get("content-encoding"), f).toBe("gzip");
      bytes += (await res.arrayBuffer()).byteLength;
    }
    expect(bytes).toBeLessThan(250 * 1024);
    // no module imports anything from elsewhere
    for (const f of files.filter((x) => x.endsWith(".js"))) expect(await (await fetch(`${env.url}${f}`)).text(), f).not.toMatch(/from\s*["']https?:/);
    expect((await fetch(`${env.url}/console/../package.json`)).status).toBe(404);
    expect((await fetch(`${env.url}/console/nope.js`)).status).toBe(404);
  });
});

describe("console session", () => {
  it("signs in with a key: an HttpOnly SameSite=Strict cookie that is not the key, then the APIs answer as that key", async () => {
    const k = await env.key({ name: "console-user" });
    const { res, cookie } = await signIn(k.secret);
    expect(res.status).toBe(200);
    const set = res.headers.get("set-cookie")!;
    expect(set).toMatch(/httponly/i);
    expect(set).toMatch(/samesite=strict/i);
    expect(set).not.toContain(k.secret);
    const me = await session(cookie);
    expect(me.json.key).toMatchObject({ id: k.id, name: "console-user", access_level: "custom" });
    expect(JSON.stringify(me.json)).not.toContain(k.secret);
    // a GET with the cookie alone is made with the key
    const usage = await fetch(`${env.url}/v1/usage?group_by=key`, { headers: { cookie } });
    expect(usage.status).toBe(200);
    const audit = await fetch(`${env.url}/v1/audit-logs`, { headers: { cookie, "x-api-key-id": k.id } });
    expect(audit.status).toBe(200);
  });

  it("refuses writes without the CSRF token, or from another site, and accepts them with it", async () => {
    const { cookie } = await signIn(env.adminKey);
    const me = await session(cookie);
    const create = (headers: Record<string, string>) =>
      fetch(`${env.url}/v1/api-keys`, { method: "POST", headers: { cookie, "content-type": "application/json", ...headers }, body: JSON.stringify({ name: "via-console" }) });
    const none = await create({});
    expect(none.status).toBe(403);
    expect(((await none.json()) as any).error.message).toContain("CSRF");
    expect((await create({ "x-csrf-token": "wrong" })).status).toBe(403);
    expect((await create({ "x-csrf-token": me.json.csrf, origin: "http://evil.example" })).status).toBe(403);
    const ok = await create({ "x-csrf-token": me.json.csrf });
    expect(ok.status).toBe(201);
  });

  it("refuses a bad key, a cross-site sign-in, and ends the session with the key's revocation or sign-out", async () => {
    expect((await signIn("sk-svc-nope")).res.status).toBe(401);
    const k = await env.key({ name: "short-lived" });
    expect((await signIn(k.secret, { origin: "http://evil.example" })).res.status).toBe(403);
    const { cookie } = await signIn(k.secret);
    expect((await session(cookie)).status).toBe(200);
    await env.api("DELETE", `/v1/api-keys/${k.id}`);
    expect((await session(cookie)).status).toBe(401);

    const s2 = await signIn(env.adminKey);
    const me = await session(s2.cookie);
    expect((await fetch(`${env.url}/console/session`, { method: "DELETE", headers: { cookie: s2.cookie } })).status).toBe(403);
    expect((await fetch(`${env.url}/console/session`, { method: "DELETE", headers: { cookie: s2.cookie, "x-csrf-token": me.json.csrf } })).status).toBe(204);
    expect((await session(s2.cookie)).status).toBe(401);
    expect((await fetch(`${env.url}/v1/api-keys`, { headers: { cookie: s2.cookie } })).status).toBe(401);
  });

  it("signs in without a key on loopback while the Server allows it, not once it is turned off", async () => {
    const anon = await session("");
    expect(anon.json.loopback_available).toBe(true);
    const res = await fetch(`${env.url}/console/session/loopback`, { method: "POST" });
    expect(res.status).toBe(200);
    const cookie = (res.headers.get("set-cookie") ?? "").split(";")[0];
    const me = await session(cookie);
    expect(me.json).toMatchObject({ loopback: true, key: { role: "admin", access_level: "full" } });
    // a DNS-rebinding page names another host
    expect(await postWithHost("/console/session/loopback", "evil.example")).toBe(403);
    expect(await postWithHost("/console/session/loopback", "localhost")).toBe(200);
    const server = env.svc.svc.server as { allowUnauthenticatedLoopback?: boolean };
    const before = server.allowUnauthenticatedLoopback;
    server.allowUnauthenticatedLoopback = false;
    try {
      expect((await fetch(`${env.url}/console/session/loopback`, { method: "POST" })).status).toBe(403);
      expect((await session("")).json.loopback_available).toBe(false);
    } finally {
      server.allowUnauthenticatedLoopback = before;
    }
  });
});
