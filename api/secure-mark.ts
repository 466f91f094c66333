// Marks a request that arrived through the secure channel (api/routes/secure.ts dispatches the
// inner request on an in-memory socket carrying this mark and the outer caller's address). The
// mark is a property of a socket object svc made itself: no header or body can forge it.
import type { HttpContext } from "./http-context";
import { SvcError } from "../engines/errors";

const kSecure = Symbol("svc.secureChannel");

export interface SecureOrigin {
  sessionId: string;
  deviceId?: string;
}

export function markSecure(socket: object, origin: SecureOrigin): void {
  (socket as any)[kSecure] = origin;
}

export function secureOriginOf(ctx: Pick<HttpContext, "req">): SecureOrigin | undefined {
  return (ctx.req.socket as any)?.[kSecure];
}

/** Remote callers of host-executing routes (agents run/dispatch) must come through the channel. */
export function requireSecureIfRemote(ctx: Pick<HttpContext, "req">, loopback: boolean, what: string): void {
  if (loopback || secureOriginOf(ctx)) return;
  throw new SvcError("upgrade_required",
    "secure_channel_required",
    `${what} from a non-loopback address must go through the secure channel (POST /secure/session, then POST /secure/call; \`svc pair call\` does this)`,
  );
}
