// The bodies of the key-management routes (create, patch, temporary) as JSON Schemas, and their
// validation: the first problem becomes 400 invalid_request naming the field.
import Ajv, { type ErrorObject, type ValidateFunction } from "ajv";
import addFormats from "ajv-formats";
import { Type, type TSchema } from "@sinclair/typebox";
import { AccessLevel, Audience, Scopes, BudgetAlerts, BudgetLimits, IpAllowlist, Permissions, RateLimits, TokenLimits, WebhookEvent } from "../../schemas/kinds/api-key";
import { PolicyDocument } from "../../schemas/kinds/access-policy";
import { invalidRequest } from "../errors";
import { describeMissing } from "../secrets/refs";

/** Longest life of a temporary key: 30 days. */
export const MAX_TEMPORARY_SECONDS = 30 * 86_400;

export const SECRET_REF = /^(env:[A-Za-z_][A-Za-z0-9_]*|file:.+)$/;

const WebhookBody = Type.Object(
  {
    enabled: Type.Boolean({ default: true }),
    url: Type.String({ format: "uri" }),
    events: Type.Array(WebhookEvent, { default: [] }),
    secret: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
  },
  { additionalProperties: false },
);

const ExpiresAt = Type.Union([Type.String({ format: "date-time" }), Type.Null()]);

export const mutable = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  description: Type.String({ maxLength: 2000 }),
  permissions: Permissions,
  access_level: AccessLevel,
  scopes: Scopes,
  audience: Audience,
  policies: Type.Array(Type.String({ minLength: 1 })),
  policy: PolicyDocument,
  rate_limits: RateLimits,
  budget_limits: BudgetLimits,
  budget_alerts: BudgetAlerts,
  token_limits: TokenLimits,
  expires_at: ExpiresAt,
  ip_allowlist: IpAllowlist,
  webhook: WebhookBody,
  metadata: Type.Record(Type.String(), Type.Unknown()),
};

const opt = (o: Record<string, TSchema>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, Type.Optional(v)])) as Record<string, TSchema>;

export const CreateBody = Type.Object(
  {
    ...opt(mutable),
    key_type: Type.Optional(Type.Union([Type.Literal("organization"), Type.Literal("team"), Type.Literal("user")])),
    organization_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    team_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    user_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  },
  { additionalProperties: false },
);

/** PATCH: JSON merge patch (RFC 7396) of the mutable fields; null removes a field. */
export const PatchBody = Type.Object(
  Object.fromEntries(Object.keys(mutable).map((k) => [k, Type.Optional(Type.Unknown())])),
  { additionalProperties: false },
);

export const TemporaryBody = Type.Object(
  {
    expires_in: Type.Integer({ minimum: 1, maximum: MAX_TEMPORARY_SECONDS }),
    permissions: Type.Optional(
      Type.Object(
        { models: Type.Optional(Type.Array(Type.String({ minLength: 1 }))), max_requests: Type.Optional(Type.Integer({ minimum: 1 })) },
        { additionalProperties: false },
      ),
    ),
    metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    description: Type.Optional(Type.String({ maxLength: 2000 })),
  },
  { additionalProperties: false },
);

let ajv: Ajv | undefined;
const compiled = new Map<TSchema, ValidateFunction>();
function validator(s: TSchema): ValidateFunction {
  let v = compiled.get(s);
  if (!v) {
    if (!ajv) {
      ajv = new Ajv({ allErrors: false, strict: false, useDefaults: true });
      addFormats(ajv);
    }
    v = ajv.compile(s);
    compiled.set(s, v);
  }
  return v;
}

function describe(e: ErrorObject): { field: string; message: string } {
  let ptr = e.instancePath;
  if (e.keyword === "additionalProperties") ptr += `/${(e.params as any).additionalProperty}`;
  if (e.keyword === "required") ptr += `/${(e.params as any).missingProperty}`;
  const field = ptr.replace(/^\//, "").replace(/\//g, ".") || "(body)";
  let message = e.message ?? "is invalid";
  if (e.keyword === "additionalProperties") message = "is not a known field";
  if (e.keyword === "required") message = "is required";
  const allowed = (e.params as any).allowedValues ?? (e.params as any).allowedValue;
  if (e.keyword === "enum" && Array.isArray(allowed) && allowed.length > 20) message = `must be one of the ${allowed.length} allowed values (an ISO 4217 code such as USD or EUR)`;
  else if (e.keyword === "enum" || e.keyword === "const") message += `: ${JSON.stringify(allowed)}`;
  return { field, message };
}

export function check(s: TSchema, value: unknown, prefix = ""): void {
  const v = validator(s);
  if (v(value)) return;
  // unions report every branch; the first error is the most specific for our schemas
  const errs = v.errors ?? [];
  const e = errs.find((x) => x.keyword !== "anyOf" && x.keyword !== "oneOf") ?? errs[0];
  const { field, message } = describe(e);
  const f = prefix ? (field === "(body)" ? prefix : `${prefix}.${field}`) : field;
  throw invalidRequest(`invalid ${f}: ${message}`, f);
}


/**
 * A request naming a secret reference (env:NAME, file:/path) that does not resolve now is refused,
 * as a plan reports it: a key made with it would look configured and fail every delivery. Only
 * the reference fields are checked (metadata may hold any "env:..." text).
 */
export function refuseUnresolvableRefs(body: { webhook?: { secret?: unknown } } | undefined): void {
  const ref = body?.webhook?.secret;
  if (typeof ref !== "string" || !SECRET_REF.test(ref)) return;
  const why = describeMissing(ref);
  if (why) throw invalidRequest(`invalid webhook.secret: ${ref} does not resolve: ${why}`, "webhook.secret");
}
