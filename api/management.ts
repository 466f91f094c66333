// Callers of the key-management and audit-log routes, at the gate (engines/gateway/gate.ts):
// authenticated like inference but never anonymous (401 with the failure's code, the failed-auth
// alert), the key's IP allowlist, and every call audited under the calling key, success or
// failure. Which keys a caller may manage is the key administration's rule (key-admin.ts).
import type { Context } from "koa";
import type { Svc } from "../engines/svc";
import type { Gateway } from "../engines/gateway";
import type { KeyEntry } from "../engines/gateway/keys";
import { SvcError } from "../engines/errors";
import { ACCEPTED_KEY_FORMS, callerFrom, tokenFrom } from "./caller";

/** The gateway engine; looked up per request because it is attached after the routers are built. */
export function gatewayOf(svc: Svc): Gateway {
  const gw = svc.engines.gateway;
  if (!gw?.admin) throw new SvcError("unavailable", "model_unavailable", "key management and audit logs are unavailable: the gateway engine is not running");
  return gw;
}

/** The calling key (401 when missing or not usable, 403 outside its IP allowlist). */
export function managementActor(gw: Gateway, ctx: Context): KeyEntry {
  if (!tokenFrom(ctx)) throw new SvcError("unauthenticated", "invalid_api_key", `missing API key: ${ACCEPTED_KEY_FORMS}`);
  const caller = callerFrom(ctx);
  // no anonymous loopback here: a token that is no key is a 401 whatever the address
  const key = gw.gate.admit({ ...caller, loopback: false, key: caller.key }, null, "api_keys.authenticate");
  if (!key) throw new SvcError("unauthenticated", "invalid_api_key", `missing API key: ${ACCEPTED_KEY_FORMS}`);
  ctx.state.keyId = key.id; // for the access log line (api/request-id.ts)
  return key;
}

/** Run one management call and record it in the audit log under `actor`. */
export async function audited(gw: Gateway, ctx: Context, actor: KeyEntry, action: string, metadata: Record<string, unknown>, run: () => Promise<void> | void): Promise<void> {
  const caller = { ...callerFrom(ctx), key: actor };
  await gw.gate.call(caller, { action, scope: null, audit: action, metadata }, async () => run());
}
