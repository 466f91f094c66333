// Loopback detection from the socket address only: X-Forwarded-For and friends never make a
// remote caller local (app.proxy stays false).
import type { Next } from "koa";
import type { HttpContext } from "./http-context";
import { SvcError } from "../engines/errors";
import { isLoopbackAddress } from "../engines/loopback-address";

export { isLoopbackAddress };

/** The caller's address as the socket sees it (IPv4-mapped IPv6 unwrapped). */
export function clientIp(ctx: HttpContext): string {
  const raw = ctx.req.socket.remoteAddress ?? "";
  return raw.startsWith("::ffff:") ? raw.slice(7) : raw;
}

export function isLoopback(ctx: HttpContext): boolean {
  return isLoopbackAddress(ctx.req.socket.remoteAddress);
}

/** Middleware for admin routes: refuse any non-loopback caller, whatever key it sends. */
export async function loopbackOnly(ctx: HttpContext, next: Next) {
  if (!isLoopback(ctx)) {
    throw new SvcError("forbidden", "permission_denied", "administration routes are served on loopback only");
  }
  await next();
}
