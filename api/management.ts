// Callers of the key-management and audit-log routes: authenticated like inference (401 with
// the failure's code, the failed-auth alert, the key's IP allowlist), and every call audited
// under the calling key, success or failure.
import type { Context } from "koa";
import type { Svc } from "../engines/svc";
import type { Gateway } from "../engines/gateway";
import { AUTH_MESSAGES, ipAllowed, tokenPrefix, type KeyEntry } from "../engines/gateway/keys";
import { GatewayError } from "../engines/gateway/errors";
import { accessRefusal, managementAccessAction } from "../engines/gateway/access-level";
import { ACCEPTED_KEY_FORMS, tokenFrom } from "./caller";
import { clientIp } from "./loopback";

/** The gateway engine; looked up per request because it is attached after the routers are built. */
export function gatewayOf(svc: Svc): Gateway {
  const gw = svc.engines.gateway;
  if (!gw?.admin) throw new GatewayError(503, "model_unavailable", "key management and audit logs are unavailable: the gateway engine is not running");
  return gw;
}

/** The calling key (401 when missing or not usable, 403 outside its IP allowlist). */
export function managementActor(gw: Gateway, ctx: Context): KeyEntry {
  const token = tokenFrom(ctx);
  if (!token) throw new GatewayError(401, "invalid_api_key", `missing API key: ${ACCEPTED_KEY_FORMS}`);
  const r = gw.keys.authenticate(token);
  if (!r.ok) {
    gw.alerts.failedAuth(tokenPrefix(token), clientIp(ctx), r.key?.ref);
    throw new GatewayError(401, r.code, AUTH_MESSAGES[r.code]);
  }
  ctx.state.keyId = r.key.id; // for the access log line (api/request-id.ts)
  if (r.key.ipRanges && !ipAllowed(clientIp(ctx), r.key.ipRanges)) {
    throw new GatewayError(403, "ip_not_allowed", `address ${clientIp(ctx)} is not in this key's IP allowlist`);
  }
  return r.key;
}

/** Run one management call and record it in the audit log under `actor`. */
export async function audited(gw: Gateway, ctx: Context, actor: KeyEntry, action: string, metadata: Record<string, unknown>, run: () => Promise<void> | void): Promise<void> {
  const started = Date.now();
  let status = "success";
  try {
    const level = accessRefusal(actor, managementAccessAction(action));
    if (level) throw new GatewayError(403, "permission_denied", level);
    await run();
  } catch (e) {
    status = e instanceof GatewayError ? e.code : "internal_error";
    throw e;
  } finally {
    gw.audit.record({
      timestamp: new Date(started),
      apiKeyId: actor.id,
      apiKeyName: actor.name,
      organizationId: actor.spec.organization_id,
      requestId: String(ctx.state.requestId ?? ""),
      action,
      status,
      latencyMs: Date.now() - started,
      promptTokens: 0,
      completionTokens: 0,
      costMicros: 0n,
      metadata,
      ipAddress: clientIp(ctx),
      userAgent: ctx.get("user-agent") || undefined,
    });
  }
}
