// One audit row as INSERT parameters (the AuditEntry columns in order, prisma/repos/types.ts
// AUDIT_COLUMNS), shared by the audit log's batches and the write-ahead recovery (limits/wal.ts)
// that writes rows for interrupted requests.
import type { AuditRecord } from "../key-types";
import type { AuditRow } from "../../../prisma/repos/types";
import { dbIsoAt } from "../../iso-time";

/** Caller metadata larger than this is replaced by a marker (an audit row is not a blob store). */
const MAX_METADATA_CHARS = 16_384;

/** One row's INSERT parameters, in AUDIT_COLUMNS order. */
export type Row = AuditRow;

/** An audit entry id: creation time and a per-process sequence in base 36, then the process's
 * random tail, so ids sort by creation within a process and never collide across processes. */
export function auditId(ms: number, seq: number, tail: string): string {
  return `aud_${ms.toString(36).padStart(9, "0")}${seq.toString(36).padStart(6, "0")}${tail}`;
}

function toInt(n: number | undefined): number {
  return Number.isFinite(n) ? Math.max(0, Math.round(n as number)) : 0;
}

export function auditRow(e: AuditRecord, id: string, ts: Date): Row {
  let metadata = "{}";
  try {
    // most rows carry none: no stringify call for the empty default
    if (e.metadata != null) metadata = JSON.stringify(e.metadata) ?? "{}";
  } catch {
    metadata = '{"_unserializable":true}';
  }
  if (metadata.length > MAX_METADATA_CHARS) metadata = JSON.stringify({ _truncated: true, _chars: metadata.length });
  const prompt = toInt(e.promptTokens);
  const completion = toInt(e.completionTokens);
  // AUDIT_COLUMNS order; DateTime as the Prisma adapter stores it (ISO text with +00:00)
  return [
    id,
    dbIsoAt(ts.getTime()),
    e.apiKeyId ?? null,
    e.apiKeyName ?? null,
    e.organizationId ?? null,
    e.requestId,
    e.action,
    e.model ?? null,
    e.provider ?? null,
    e.status,
    e.errorCode ?? (e.status !== "success" ? e.status : null),
    toInt(e.latencyMs),
    prompt,
    completion,
    prompt + completion,
    typeof e.costMicros === "bigint" ? e.costMicros : BigInt(toInt(Number(e.costMicros ?? 0))),
    metadata,
    e.ipAddress ?? null,
    e.userAgent ?? null,
    e.traceId ?? null,
  ];
}
