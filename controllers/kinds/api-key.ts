// ApiKey controller: the one path from the store to the key cache (engines/gateway/keys.ts). Its
// projection puts or removes the key inside the store write, so a revocation is effective on the
// very next request; reconcile reports each key's truth as status:
//   Ready=True  Active                       usable now (requeued at expires_at)
//   Ready=False Revoked | Expired            refused with 401 key_revoked / key_expired
//   Ready=False PolicyNotFound               a bound AccessPolicy does not exist (requests are
//                                            refused with 403 policy_denied until it does)
//   Ready=False InvalidSecretHash            spec.secretHash is not sha256:<64 hex>
//   Ready=False WebhookSecretMissing         the webhook's secret reference does not resolve:
//                                            the key works, its webhook deliveries fail
import type { KindController } from "../types";
import type { KeyCache } from "../../engines/gateway/keys";
import { keyState } from "../../engines/gateway/keys";
import type { PolicyIndex } from "../../engines/gateway/policy";
import type { Limits } from "../../engines/gateway/limits";
import { describeMissing } from "../../engines/secrets/refs";

const MAX_TIMER_MS = 2_147_000_000; // setTimeout's limit (~24.8 days)

export function apiKeyController(d: { keys: KeyCache; policies: PolicyIndex; limits?: Limits; now?: () => number }): KindController<"ApiKey"> {
  const now = d.now ?? Date.now;
  return {
    kind: "ApiKey",
    project(name, obj) {
      if (obj) d.keys.put(obj);
      else d.keys.remove(name);
    },
    async reconcile(obj) {
      const e = d.keys.get(obj.name); // put by project() in the store write that changed it
      if (!e) return { status: "False", reason: "InvalidSecretHash", message: "spec.secretHash must be sha256:<64 hex digits> (make one with `svc keys generate`)" };
      const missing = (e.spec.policies ?? []).filter((n) => !d.policies.has(n));
      if (missing.length) {
        return {
          status: "False",
          reason: "PolicyNotFound",
          message: `bound access ${missing.length === 1 ? "policy" : "policies"} ${missing.map((m) => JSON.stringify(m)).join(", ")} not found; requests with this key are denied`,
          requeueAfterMs: 10_000,
          extra: { keyStatus: keyState(e, now()) },
        };
      }
      const t = now();
      const state = keyState(e, t);
      if (state === "revoked") return { status: "False", reason: "Revoked", message: `revoked at ${e.spec.revoked_at}`, extra: { keyStatus: state } };
      if (state === "expired") return { status: "False", reason: "Expired", message: `expired at ${e.spec.expires_at}`, extra: { keyStatus: state } };
      const hook = e.spec.webhook;
      const secretWhy = hook && hook.enabled !== false && typeof hook.secret === "string" ? describeMissing(hook.secret) : null;
      if (secretWhy) {
        return {
          status: "False",
          reason: "WebhookSecretMissing",
          message: `webhook secret ${hook!.secret}: ${secretWhy}; the key works, but its webhook deliveries fail until then`,
          requeueAfterMs: 30_000,
          extra: { keyStatus: state },
        };
      }
      const res: { status: "True"; reason: string; message: string; extra: Record<string, unknown>; requeueAfterMs?: number } = {
        status: "True",
        reason: "Active",
        message: e.spec.expires_at ? `active until ${e.spec.expires_at}` : "active (never expires)",
        extra: { keyStatus: state },
      };
      if (Number.isFinite(e.expiresAtMs)) res.requeueAfterMs = Math.min(MAX_TIMER_MS, Math.max(1, e.expiresAtMs - t + 5));
      return res;
    },
    async finalize(obj) {
      // the key left the cache when its deletion was written (project)
      d.limits?.forget(obj.name);
    },
  };
}
