// What the pipeline derives from a request's outcome: its audit row, the audit status of a
// failure, and the tally of the events that went through (settlement needs output size and usage).
import { performance } from "node:perf_hooks";
import type { ChatEvent, Usage } from "../chat/types";
import type { Caller } from "./pipeline-types";
import type { AuditRecord } from "./key-types";
import type { KeyEntry } from "./keys";
import { SvcError, type RateState } from "../errors";

/** One audit row; `errorCode` only on failures. Latency runs from `t0` (performance.now()). */
export function auditRow(
  caller: Caller,
  key: KeyEntry,
  timestamp: Date,
  action: string,
  model: string | undefined,
  provider: string | undefined,
  status: string,
  t0: number,
  promptTokens: number,
  completionTokens: number,
  costMicros: number,
  metadata: Record<string, unknown>,
  errorCode?: string,
  end = performance.now(),
): AuditRecord {
  return {
    timestamp,
    apiKeyId: key.id,
    apiKeyName: key.name,
    organizationId: key.spec.organization_id,
    requestId: caller.requestId,
    action,
    model,
    provider,
    status,
    errorCode, // undefined on success: one object shape for every row
    latencyMs: Math.round(end - t0),
    promptTokens,
    completionTokens,
    costMicros: BigInt(costMicros),
    metadata,
    ipAddress: caller.ip,
    userAgent: caller.userAgent,
    traceId: caller.trace?.spanContext().traceId,
  };
}

export interface Tally {
  usage: Usage | undefined;
  chars: number;
  finish?: string;
  /** the answer's text pieces, kept only while its span records content (trace-spans.ts) */
  text?: string[];
}

/** What settlement needs from the events that went through: output size and final usage. */
export function count(t: Tally, ev: ChatEvent): void {
  if (ev.type === "text") {
    t.chars += ev.text.length;
    if (t.text) t.text.push(ev.text);
  }
  else if (ev.type === "tool_call_delta") t.chars += ev.argumentsDelta.length;
  else if (ev.type === "done") {
    t.usage = ev.usage;
    t.finish = ev.finishReason;
  }
}

/** A group commit of reservations failed (disk full, store closed): refuse rather than forward
 * a request whose limits are not recorded. */
export function storeUnavailable(e: unknown): never {
  if (e instanceof SvcError) throw e; // a shared limit store's refusal (limits/shared.ts)
  throw new SvcError("unavailable", "internal_error", `usage limits could not be recorded, retry later (${String((e as Error)?.message ?? e)})`);
}

/** Wait for a write-ahead reservation (limits/wal.ts) to be written before the answer leaves.
 * If it could not be written, the upstream's answer is dropped (a stream is opened and closed,
 * which releases its body) and the request is refused with 503. */
export async function reservationWritten(written: Promise<void>, events?: AsyncIterable<unknown>): Promise<void> {
  try {
    await written;
  } catch (e) {
    if (events) {
      const it = events[Symbol.asyncIterator]();
      it.next().then(() => it.return?.(), () => undefined).catch(() => undefined);
    }
    storeUnavailable(e);
  }
}

/** A refusal after admission carries the key's rate window (x-ratelimit-* on the error response)
 * unless it has its own (a limit's refusal). */
export function withRate(e: unknown, rate: RateState | undefined): void {
  if (!rate || !(e instanceof SvcError) || e.limit.limit !== undefined) return;
  e.limit = { ...e.limit, limit: rate.limit, remaining: rate.remaining, resetSeconds: rate.resetSeconds };
}

/** The audit status of a failure: the gateway error code, an engine's own code, or cancelled. */
export function codeOf(e: unknown): string {
  if (e instanceof SvcError) return e.code;
  if (isAbortLike(e)) return "cancelled";
  const x = e as { status?: unknown; code?: unknown } | undefined;
  if (typeof x?.status === "number" && typeof x.code === "string") return x.code;
  return "internal_error";
}

function isAbortLike(e: unknown): boolean {
  const x = e as { name?: string; code?: string } | undefined;
  return x?.name === "AbortError" || x?.code === "UND_ERR_ABORTED" || x?.code === "ABORT_ERR";
}
