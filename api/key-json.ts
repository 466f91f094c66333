// The API shape of a key (POST/GET/PATCH/DELETE /v1/api-keys): every field, never the secret's
// hash; the secret itself only in the creation answer. Key administration (engines/gateway/
// key-admin.ts) decides; this file only shapes what it returns.
import type { StoredObject } from "../prisma/resource-store";
import type { ApiKeySpec } from "../schemas/kinds/api-key";
import type { KeyEntry } from "../engines/gateway/keys";
import { scopeBits, scopeNames } from "../engines/gateway/scopes";
import { stateOf, type KeyView } from "../engines/gateway/key-admin";
import { utcIso } from "../engines/iso-time";
import { describeMissing } from "../engines/secrets/refs";

/** The key as the API shows it: every field, never the secret or its hash. */
export function keyJson(o: StoredObject, now = Date.now(), e?: KeyEntry): Record<string, unknown> {
  const s = o.spec as ApiKeySpec;
  // read now, not from the last reconcile: a variable unset or a file removed shows at once
  const secretWhy = s.webhook?.secret ? describeMissing(s.webhook.secret) : null;
  const out: Record<string, unknown> = {
    id: o.name,
    object: "api_key",
    name: s.name ?? o.name,
    description: s.description ?? null,
    key_type: s.key_type ?? "user",
    organization_id: s.organization_id ?? null,
    team_id: s.team_id ?? null,
    user_id: s.user_id ?? null,
    permissions: s.permissions ?? {},
    access_level: s.access_level ?? "custom",
    scopes: s.scopes ?? null,
    effective_scopes: scopeNames(scopeBits(s.scopes)),
    audience: s.audience ?? "*",
    policies: s.policies ?? [],
    policy: s.policy ?? null,
    rate_limits: s.rate_limits ?? null,
    budget_limits: s.budget_limits ?? null,
    budget_alerts: s.budget_alerts ?? null,
    token_limits: s.token_limits ?? null,
    expires_at: s.expires_at ? utcIso(s.expires_at) : null, // manifests may name any offset
    ip_allowlist: s.ip_allowlist ?? null,
    webhook: s.webhook ? { enabled: s.webhook.enabled !== false, url: s.webhook.url, events: s.webhook.events ?? [], secret_configured: !!s.webhook.secret && !secretWhy } : null,
    metadata: s.metadata ?? {},
    status: stateOf(o, now, e),
    // what works only in part: the key authenticates, its webhook deliveries fail
    degraded: secretWhy
      ? { reason: "WebhookSecretMissing", message: `webhook secret ${s.webhook!.secret}: ${secretWhy}; the key works, but its webhook deliveries fail until then` }
      : null,
    created_at: o.createdAt,
    updated_at: o.updatedAt,
    revoked_at: s.revoked_at ? utcIso(s.revoked_at) : null,
    managed_by: o.owner,
  };
  return out;
}


/** A key administration answer as the API body: {api_key?, ...key, usage?, expires_in?}. */
export function keyBody(v: KeyView): Record<string, unknown> {
  return {
    ...(v.secret !== undefined ? { api_key: v.secret } : {}),
    ...keyJson(v.object, v.now, v.entry),
    ...(v.usage !== undefined ? { usage: v.usage } : {}),
    ...(v.expiresIn !== undefined ? { expires_in: v.expiresIn } : {}),
  };
}
