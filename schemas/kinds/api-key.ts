// ApiKey: every field of spec/gateway.md's key record. Manifests carry only `secretHash`.
import { Type, type Static } from "@sinclair/typebox";
import { envelope, SecretRef } from "../common";
import { PolicyDocument } from "./access-policy";
import { Currency } from "./currency";

const NonNeg = (d?: string) => Type.Number({ minimum: 0, ...(d ? { description: d } : {}) });
const PosInt = Type.Integer({ minimum: 1 });

export const RateLimits = Type.Object(
  { per_minute: Type.Optional(PosInt), per_hour: Type.Optional(PosInt), per_day: Type.Optional(PosInt), burst: Type.Optional(PosInt) },
  { additionalProperties: false },
);
export const BudgetLimits = Type.Object(
  {
    daily: Type.Optional(NonNeg()),
    monthly: Type.Optional(NonNeg()),
    total: Type.Optional(NonNeg()),
    currency: Type.Unsafe<string>({ ...Currency, default: "USD", description: "ISO 4217 code of the budget; spend is converted into it (Server.spec.exchangeRates)." }),
  },
  { additionalProperties: false },
);
export const BudgetAlerts = Type.Object(
  {
    thresholds: Type.Array(Type.Integer({ minimum: 1, maximum: 100 }), { default: [] }),
    notify_email: Type.Optional(Type.String({ format: "email" })),
  },
  { additionalProperties: false },
);
export const TokenLimits = Type.Object(
  { daily: Type.Optional(PosInt), monthly: Type.Optional(PosInt), per_request_max: Type.Optional(PosInt) },
  { additionalProperties: false },
);
export const IpAllowlist = Type.Object(
  { enabled: Type.Boolean({ default: true }), addresses: Type.Array(Type.String({ minLength: 1 }), { default: [] }) },
  { additionalProperties: false },
);
export const WebhookEvent = Type.Union([
  Type.Literal("key.created"),
  Type.Literal("key.revoked"),
  Type.Literal("key.limit_exceeded"),
  Type.Literal("key.budget_threshold"),
  Type.Literal("key.suspicious_activity"),
]);
export const Webhook = Type.Object(
  {
    enabled: Type.Boolean({ default: true }),
    url: Type.String({ format: "uri" }),
    events: Type.Array(WebhookEvent, { default: [] }),
    secret: Type.Optional(SecretRef),
  },
  { additionalProperties: false },
);

export const Permissions = Type.Object(
  {
    models: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    actions: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    manage_keys: Type.Optional(Type.Boolean()),
    view_all_usage: Type.Optional(Type.Boolean()),
    manage_billing: Type.Optional(Type.Boolean()),
    monthly_budget: Type.Optional(NonNeg()),
    daily_budget: Type.Optional(NonNeg()),
    rate_limit_per_minute: Type.Optional(PosInt),
    max_requests: Type.Optional(PosInt),
  },
  { additionalProperties: false },
);

export const Scopes = Type.Array(
  Type.Union([Type.Literal("inference"), Type.Literal("tools"), Type.Literal("agents:run"), Type.Literal("agents:dispatch"), Type.Literal("memory"), Type.Literal("owner")]),
  { uniqueItems: true, description: "What the key may be used for. Omitted: every scope but owner (the behaviour of keys made before scopes)." },
);
export const Audience = Type.String({
  pattern: "^(\\*|agent:[A-Za-z0-9][A-Za-z0-9._-]*)$",
  description: "\"*\" (any, the default) or \"agent:<name>\": the key may run and dispatch only that agent.",
});

/** spec/gateway.md's dashboard access levels (engines/gateway/access-level.ts holds the rule). */
export const AccessLevel = Type.Union([Type.Literal("full"), Type.Literal("read_only"), Type.Literal("custom")], {
  description: "full: what the key's role allows everywhere; read_only: list models, read usage and audit, nothing else; custom (the default): permissions, scopes and policies.",
});

export const ApiKeySpec = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: "Descriptive label (defaults to metadata.name)." })),
    description: Type.Optional(Type.String({ maxLength: 2000 })),
    key_type: Type.Union([Type.Literal("organization"), Type.Literal("team"), Type.Literal("user"), Type.Literal("temporary")], { default: "user" }),
    organization_id: Type.Optional(Type.String({ minLength: 1 })),
    team_id: Type.Optional(Type.String({ minLength: 1 })),
    user_id: Type.Optional(Type.String({ minLength: 1 })),
    permissions: Type.Optional(Permissions),
    access_level: Type.Optional(AccessLevel),
    scopes: Type.Optional(Scopes),
    audience: Type.Optional(Audience),
    policies: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { description: "AccessPolicy names bound to this key." })),
    policy: Type.Optional(PolicyDocument),
    rate_limits: Type.Optional(RateLimits),
    budget_limits: Type.Optional(BudgetLimits),
    budget_alerts: Type.Optional(BudgetAlerts),
    token_limits: Type.Optional(TokenLimits),
    expires_at: Type.Optional(Type.Union([Type.String({ format: "date-time" }), Type.Null()])),
    ip_allowlist: Type.Optional(IpAllowlist),
    webhook: Type.Optional(Webhook),
    webhook_internal: Type.Optional(
      Type.Boolean({ description: "Set by svc, not by clients: the administrator named webhook.url, so it may reach loopback, private or link-local receivers. Manifest keys may always." }),
    ),
    secretHash: Type.String({ pattern: "^sha256:[0-9a-f]{64}$", description: "Made by `svc keys generate`; the secret never appears here." }),
    revoked_at: Type.Optional(Type.String({ format: "date-time" })),
    metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { additionalProperties: false },
);
export type ApiKeySpec = Static<typeof ApiKeySpec>;
export const ApiKey = envelope("ApiKey", ApiKeySpec, "A gateway API key, stored as a hash.");

// The key hierarchy (spec/gateway.md): organization_id on organization, team and user keys,
// team_id on team and user keys, user_id on user keys. key_type, when omitted, is the most
// specific id given; a key naming no id at all (and key_type user or none) is a standalone key,
// outside every organization: it is shown as key_type "user" with no ids, and nothing rolls up.
type HierarchyIds = { key_type?: string; organization_id?: string; team_id?: string; user_id?: string };
const NEEDS: Record<string, Array<"organization_id" | "team_id" | "user_id">> = {
  organization: ["organization_id"],
  team: ["team_id", "organization_id"],
  user: ["user_id", "team_id", "organization_id"],
};

/** key_type of a body or manifest that names none: user_id -> user, team_id -> team,
 * organization_id -> organization, none -> user (a standalone key). */
export function inferKeyType(s: HierarchyIds): "organization" | "team" | "user" {
  return s.user_id ? "user" : s.team_id ? "team" : s.organization_id ? "organization" : "user";
}

/** The first hierarchy id a key of its type lacks, with the message to show; undefined when complete. */
export function missingHierarchyId(s: HierarchyIds): { field: string; message: string } | undefined {
  const t = s.key_type ?? inferKeyType(s);
  const need = NEEDS[t];
  if (!need) return undefined; // temporary keys stand outside the hierarchy
  if (t === "user" && !s.organization_id && !s.team_id && !s.user_id) return undefined; // standalone
  const f = need.find((k) => !s[k]);
  if (!f) return undefined;
  const a = t === "organization" ? "an organization" : `a ${t}`;
  return { field: f, message: `is required for ${a} key (${need.slice().reverse().join(", ")}); a key with none of them is a standalone key` };
}

type KeyLike = { name: string; spec: unknown };
interface KeySpecLike {
  key_type?: string;
  organization_id?: string;
  team_id?: string;
  user_id?: string;
  budget_limits?: { currency?: string };
  revoked_at?: string;
}

/** The currency a key's spend is counted in: its budget's, USD when it names none. */
const countedIn = (s: KeySpecLike) => s.budget_limits?.currency ?? "USD";

/**
 * Spend rolls up from user to team to organization keys' counters, one amount for all three, so a
 * key must count in the currency of every budgeted team or organization key above it, and a
 * budgeted team or organization key in the currency of every key below it. The first key that
 * breaks this with `key` (never itself), with its currency; undefined when none does.
 */
export function rollupCurrencyConflict(key: KeyLike, others: Iterable<KeyLike>): { key: string; currency: string; above: boolean } | undefined {
  const s = key.spec as KeySpecLike;
  const org = s.organization_id;
  if (!org || s.key_type === "temporary") return undefined;
  const type = s.key_type ?? inferKeyType(s);
  const mine = countedIn(s);
  for (const o of others) {
    const t = o.spec as KeySpecLike;
    if (o.name === key.name || t.organization_id !== org || t.revoked_at || t.key_type === "temporary") continue;
    const tType = t.key_type ?? inferKeyType(t);
    const above = (tType === "organization" && type !== "organization") || (tType === "team" && type === "user" && t.team_id === s.team_id);
    const below = (type === "organization" && tType !== "organization") || (type === "team" && tType === "user" && t.team_id === s.team_id);
    if (above && t.budget_limits && countedIn(t) !== mine) return { key: o.name, currency: countedIn(t), above: true };
    if (below && s.budget_limits && countedIn(t) !== mine) return { key: o.name, currency: countedIn(t), above: false };
  }
  return undefined;
}

export function rollupConflictMessage(mine: string, c: { key: string; currency: string; above: boolean }): string {
  return c.above
    ? `counts spend in ${mine} but key ${c.key} above it budgets in ${c.currency}; spend rolls up to team and organization budgets as one amount, so set budget_limits.currency: ${c.currency}`
    : `budgets in ${mine} but key ${c.key} below it counts spend in ${c.currency}; spend rolls up to team and organization budgets as one amount, so every key of the organization counts in one currency`;
}
