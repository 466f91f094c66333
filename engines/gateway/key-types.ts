// The in-memory view of a key that the hot path reads (no Prisma on the request path).
import type { ApiKeySpec } from "../../schemas/kinds/api-key";

export type KeyState = "active" | "revoked" | "expired";

export interface KeyRecord {
  /** opaque identifier: metadata.name of the ApiKey object */
  id: string;
  /** descriptive label (spec.name ?? id) */
  name: string;
  owner: string; // "api" or "config:<source>"
  spec: ApiKeySpec;
  /** sha256 hex of the secret (no "sha256:" prefix) */
  hash: string;
  createdAt: string;
}

/** What audit, alerts and webhooks need to know about a key. */
export interface KeyRef {
  id: string;
  name: string;
  organizationId?: string;
  teamId?: string;
  webhook?: ApiKeySpec["webhook"];
  /** the webhook URL may reach only public receivers: an API-made key whose URL the
   * administrator did not name (webhooks/url-policy.ts) */
  webhookPublicOnly?: boolean;
}

export function keyRefOf(k: KeyRecord): KeyRef {
  const publicOnly = !!k.spec.webhook && k.owner === "api" && k.spec.webhook_internal !== true;
  return { id: k.id, name: k.name, organizationId: k.spec.organization_id, teamId: k.spec.team_id, webhook: k.spec.webhook, ...(publicOnly ? { webhookPublicOnly: true } : {}) };
}

/** One audit entry as recorded by the pipeline (spec/gateway.md's audit fields). */
export interface AuditRecord {
  timestamp: Date;
  apiKeyId?: string;
  apiKeyName?: string;
  organizationId?: string;
  requestId: string;
  /** dotted operation name: chat.completions, chat.stream, embeddings, keys.create, … */
  action: string;
  model?: string;
  provider?: string;
  /** "success" or an error code such as rate_limit_exceeded */
  status: string;
  errorCode?: string;
  latencyMs: number;
  promptTokens: number;
  completionTokens: number;
  costMicros: bigint;
  metadata: Record<string, unknown>;
  ipAddress?: string;
  userAgent?: string;
  /** the request's trace id while tracing is on */
  traceId?: string;
}

export type WebhookEventName =
  | "key.created"
  | "key.revoked"
  | "key.limit_exceeded"
  | "key.budget_threshold"
  | "key.suspicious_activity";
