// Console sessions: signing in with a key gives an HttpOnly, SameSite=Strict cookie naming a
// random session id; the key stays in this process's memory (never in the store, a log or the
// browser), and requests that carry the cookie and no key of their own are authenticated with it,
// so the console reaches the ordinary HTTP APIs and their checks (IP allowlist, access level,
// rights, audit) unchanged. Writes (any method but GET/HEAD/OPTIONS) also need the session's CSRF
// token in X-CSRF-Token. Sessions end at sign-out, after 12 hours, or when the server restarts.
import { randomBytes, timingSafeEqual } from "node:crypto";
import type { Context, Next } from "koa";
import { SvcError } from "../engines/errors";
import { hashSecret } from "../engines/gateway/keys";
import { isLoopback } from "./loopback";

export const SESSION_COOKIE = "svc_console";
const LIFETIME_MS = 12 * 3600_000;
const MAX_SESSIONS = 10_000;

export interface ConsoleSession {
  /** the key the console calls the APIs with (the administrative key for a loopback session) */
  token: string;
  csrf: string;
  /** signed in without a key on unauthenticated loopback */
  loopback: boolean;
  expiresAt: number;
}

/** Sessions by sha256 of their id: a memory dump does not hand out usable cookies. */
const sessions = new Map<string, ConsoleSession>();

export function createSession(token: string, loopback: boolean, now = Date.now()): { id: string; session: ConsoleSession } {
  sweep(now);
  if (sessions.size >= MAX_SESSIONS) sessions.delete(sessions.keys().next().value!); // oldest first
  const id = randomBytes(32).toString("base64url");
  const session = { token, csrf: randomBytes(24).toString("base64url"), loopback, expiresAt: now + LIFETIME_MS };
  sessions.set(hashSecret(id), session);
  return { id, session };
}

export function sessionOf(ctx: Context, now = Date.now()): ConsoleSession | undefined {
  const id = ctx.cookies.get(SESSION_COOKIE);
  if (!id || id.length > 100) return undefined;
  const s = sessions.get(hashSecret(id));
  if (!s) return undefined;
  if (s.expiresAt <= now) {
    sessions.delete(hashSecret(id));
    return undefined;
  }
  return s;
}

export function endSession(ctx: Context): void {
  const id = ctx.cookies.get(SESSION_COOKIE);
  if (id) sessions.delete(hashSecret(id));
  ctx.cookies.set(SESSION_COOKIE, "", { httpOnly: true, sameSite: "strict", path: "/", expires: new Date(0), overwrite: true });
}

export function setSessionCookie(ctx: Context, id: string): void {
  // secure only over TLS: svc serves plain HTTP on loopback by default, where a Secure cookie is dropped
  ctx.cookies.set(SESSION_COOKIE, id, { httpOnly: true, sameSite: "strict", path: "/", maxAge: LIFETIME_MS, secure: ctx.protocol === "https", overwrite: true });
}

function sweep(now: number): void {
  for (const [k, s] of sessions) if (s.expiresAt <= now) sessions.delete(k);
}

const SAFE = new Set(["GET", "HEAD", "OPTIONS"]);

export function csrfOk(ctx: Context, s: ConsoleSession): boolean {
  const got = Buffer.from(ctx.get("x-csrf-token"));
  const want = Buffer.from(s.csrf);
  return got.length === want.length && timingSafeEqual(got, want);
}

/** A browser's cross-site request says so in Origin / Sec-Fetch-Site; refuse those on writes. */
export function sameOrigin(ctx: Context): boolean {
  const site = ctx.get("sec-fetch-site");
  if (site && site !== "same-origin" && site !== "none") return false;
  const origin = ctx.get("origin");
  return !origin || origin === `${ctx.protocol}://${ctx.host}`;
}

/**
 * Koa middleware (before the routers): a request with the session cookie and no key of its own is
 * made with the session's key. Writes need the CSRF token; without it the request is refused
 * rather than sent unauthenticated (on loopback that could still succeed).
 */
export function consoleAuth() {
  return async (ctx: Context, next: Next) => {
    if (ctx.get("authorization") || ctx.get("x-api-key") || !ctx.get("cookie").includes(SESSION_COOKIE)) return next();
    if (ctx.path.startsWith("/console")) return next(); // the console's own routes check for themselves
    const s = sessionOf(ctx);
    if (!s || (s.loopback && !isLoopback(ctx))) return next(); // a loopback session serves loopback only
    if (!SAFE.has(ctx.method) && (!sameOrigin(ctx) || !csrfOk(ctx, s))) {
      throw new SvcError("forbidden", "permission_denied", "this console request lacks a valid X-CSRF-Token header (or came from another site)");
    }
    ctx.req.headers.authorization = `Bearer ${s.token}`;
    return next();
  };
}
