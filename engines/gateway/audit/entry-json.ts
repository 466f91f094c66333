// The audit entry as the API returns it: exactly spec/gateway.md's "Audit log entry" fields
// (+ error_code on failures). Storage keeps cost in integer micro-units; JSON shows USD.
import type { AuditEntry } from "../../../prisma/generated/client";

export interface AuditEntryJson {
  timestamp: string;
  api_key_id: string | null;
  api_key_name: string | null;
  request_id: string;
  action: string;
  model: string | null;
  provider: string | null;
  status: string;
  latency_ms: number;
  tokens: { prompt: number; completion: number; total: number };
  cost_usd: number;
  metadata: Record<string, unknown>;
  ip_address: string | null;
  user_agent: string | null;
  error_code?: string;
  /** the request's trace id (docs/observability.md), when it was traced */
  trace_id?: string;
}

export function toEntryJson(row: AuditEntry): AuditEntryJson {
  const out: AuditEntryJson = {
    timestamp: row.timestamp.toISOString(),
    api_key_id: row.apiKeyId,
    api_key_name: row.apiKeyName,
    request_id: row.requestId,
    action: row.action,
    model: row.model,
    provider: row.provider,
    status: row.status,
    latency_ms: row.latencyMs,
    tokens: { prompt: row.promptTokens, completion: row.completionTokens, total: row.totalTokens },
    cost_usd: Number(row.costMicros) / 1e6,
    metadata: parseMetadata(row.metadata),
    ip_address: row.ipAddress,
    user_agent: row.userAgent,
  };
  if (row.status !== "success") out.error_code = row.errorCode ?? row.status;
  if (row.traceId) out.trace_id = row.traceId;
  return out;
}

function parseMetadata(s: string): Record<string, unknown> {
  try {
    const v = JSON.parse(s);
    return v && typeof v === "object" && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
}
