// The web console: static files from console/ and three vendored ES modules from the installed
// packages (Preact + htm in one module, uPlot and its CSS), served at /console with a strict
// Content-Security-Policy (scripts from this origin only, no inline script or style element),
// gzip when the browser takes it; nothing is fetched from elsewhere. The session routes:
//   GET    /console/session           who is signed in (401 when nobody), with the CSRF token
//   POST   /console/session           {"api_key": "sk-svc-…"} -> HttpOnly SameSite=Strict cookie
//   POST   /console/session/loopback  without a key, on loopback where the Server allows it: the
//                                     session uses the administrative key (loopback may already
//                                     administer everything through /admin/config)
//   DELETE /console/session           sign out (CSRF token required)
// What the pages show and allow is enforced by the APIs they call (api/console-session.ts).
import Router from "@koa/router";
import type { Context } from "koa";
import { readFileSync, readdirSync, statSync, existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import type { Svc } from "../../engines/svc";
import { SvcError } from "../../engines/errors";
import { loadAdminKey } from "../../engines/gateway/keys";
import { accessLevelOf } from "../../engines/gateway/access-level";
import { jsonBody } from "../body-schema";
import { ConsoleSignInBody } from "../../schemas/api/pairing";
import { isLoopback } from "../loopback";
import { callerFrom } from "../caller";
import { gatewayOf } from "../management";
import { createSession, csrfOk, endSession, sameOrigin, sessionOf, setSessionCookie } from "../console-session";

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "console");

const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "font-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join("; ");

const readSignIn = jsonBody("post", "/console/session", ConsoleSignInBody);
const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
};

/** Vendored modules: URL name -> [package, file inside it]. */
const VENDOR: Record<string, [string, string]> = {
  "vendor/preact-htm.js": ["htm", "preact/standalone.module.js"],
  "vendor/uplot.js": ["uplot", "dist/uPlot.esm.js"],
  "vendor/uplot.css": ["uplot", "dist/uPlot.min.css"],
};

interface Asset {
  type: string;
  body: Buffer;
  gzip: Buffer;
}

function packageDir(name: string): string {
  const local = path.join(ROOT, "..", "node_modules", name);
  if (existsSync(local)) return local;
  const req = createRequire(import.meta.url);
  return path.dirname(req.resolve(`${name}/package.json`));
}

/** Every file the console serves, read once (a few hundred KB at most). */
function loadAssets(): Map<string, Asset> {
  const out = new Map<string, Asset>();
  const add = (name: string, file: string) => {
    const body = readFileSync(file);
    out.set(name, { type: TYPES[path.extname(file)] ?? "application/octet-stream", body, gzip: gzipSync(body, { level: 9 }) });
  };
  const walk = (dir: string, prefix: string) => {
    for (const f of readdirSync(dir)) {
      const full = path.join(dir, f);
      if (statSync(full).isDirectory()) walk(full, `${prefix}${f}/`);
      else if (TYPES[path.extname(f)]) add(`${prefix}${f}`, full);
    }
  };
  walk(ROOT, "");
  for (const [name, [pkg, file]] of Object.entries(VENDOR)) add(name, path.join(packageDir(pkg), file));
  return out;
}

function secure(ctx: Context): void {
  ctx.set("content-security-policy", CSP);
  ctx.set("x-content-type-options", "nosniff");
  ctx.set("referrer-policy", "no-referrer");
  ctx.set("x-frame-options", "DENY");
  ctx.set("cross-origin-opener-policy", "same-origin");
}

export default function routes(svc: Svc): Router {
  const r = new Router();
  let assets: Map<string, Asset> | undefined;

  const whoami = (ctx: Context) => {
    const s = sessionOf(ctx);
    if (!s || (s.loopback && !isLoopback(ctx))) return null;
    const a = gatewayOf(svc).keys.authenticate(s.token);
    if (!a.ok) return null; // revoked or expired since sign-in: the session ends with the key
    const k = a.key;
    return {
      csrf: s.csrf,
      loopback: s.loopback,
      key: {
        id: k.id,
        name: k.name,
        role: k.role,
        key_type: k.role === "key" ? (k.spec.key_type ?? "user") : k.role,
        access_level: accessLevelOf(k),
        organization_id: k.spec.organization_id ?? null,
        team_id: k.spec.team_id ?? null,
        view_all_usage: k.role === "admin" || k.spec.permissions?.view_all_usage === true,
        manage_keys: k.role === "admin" || k.spec.permissions?.manage_keys === true,
      },
    };
  };

  const loopbackAllowed = (ctx: Context) => isLoopback(ctx) && svc.server.allowUnauthenticatedLoopback !== false && loopbackHost(ctx.host);

  r.get("/console/session", (ctx) => {
    secure(ctx);
    ctx.set("cache-control", "no-store");
    const me = whoami(ctx);
    if (!me) {
      ctx.status = 401;
      ctx.body = { error: { message: "not signed in", type: "authentication_error", code: "invalid_api_key", param: null }, loopback_available: loopbackAllowed(ctx) };
      return;
    }
    ctx.body = me;
  });

  r.post("/console/session", async (ctx) => {
    secure(ctx);
    if (!sameOrigin(ctx)) throw new SvcError("forbidden", "permission_denied", "sign-in from another site is refused");
    const token = (await readSignIn(ctx)).api_key.trim();
    // the gate judges the key (revoked, expired, IP allowlist; a failed attempt alerts and is
    // audited): never anonymous, even on loopback, since a session must stand for a key
    const key = gatewayOf(svc).gate.identify({ ...callerFrom(ctx), token, loopback: false }, "models:list")!;
    const { id } = createSession(token, false);
    setSessionCookie(ctx, id);
    ctx.set("cache-control", "no-store");
    ctx.body = { ok: true, key_id: key.id };
  });

  r.post("/console/session/loopback", (ctx) => {
    secure(ctx);
    if (!sameOrigin(ctx)) throw new SvcError("forbidden", "permission_denied", "sign-in from another site is refused");
    if (!loopbackAllowed(ctx)) {
      throw new SvcError("forbidden", "permission_denied", "signing in without a key needs a loopback address (and a Server that allows unauthenticated loopback): sign in with an API key");
    }
    const { id } = createSession(loadAdminKey(svc.home), true);
    setSessionCookie(ctx, id);
    ctx.set("cache-control", "no-store");
    ctx.body = { ok: true };
  });

  r.delete("/console/session", (ctx) => {
    secure(ctx);
    const s = sessionOf(ctx);
    if (s && (!sameOrigin(ctx) || !csrfOk(ctx, s))) throw new SvcError("forbidden", "permission_denied", "sign-out needs the session's X-CSRF-Token header");
    endSession(ctx);
    ctx.status = 204;
  });

  // /console/ is made /console before routing (api/canonical-path.ts); the page names its files
  // by absolute paths, so it is served here without a redirect
  r.get("/console", (ctx) => serve(ctx, "index.html"));
  r.get(/^\/console\/.+$/, (ctx) => serve(ctx, ctx.path.slice("/console/".length)));

  function serve(ctx: Context, name: string) {
    assets ??= loadAssets();
    const a = assets.get(name);
    if (!a) throw new SvcError("not_found", "not_found", `no console file ${name.slice(0, 100)}`);
    secure(ctx);
    ctx.type = a.type;
    ctx.set("cache-control", "no-cache");
    ctx.vary("accept-encoding");
    if (ctx.acceptsEncodings("gzip", "identity") === "gzip") {
      ctx.set("content-encoding", "gzip");
      ctx.body = a.gzip;
    } else ctx.body = a.body;
  }

  return r;
}

/** A Host header naming loopback: a DNS-rebinding page (evil.example resolving to 127.0.0.1) is not. */
function loopbackHost(host: string): boolean {
  const h = host.replace(/:\d+$/, "").replace(/^\[|\]$/g, "").toLowerCase();
  return h === "localhost" || h === "::1" || /^127\.\d+\.\d+\.\d+$/.test(h);
}
