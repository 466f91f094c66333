// Upstream trouble as log lines an operator can work from: one warn line per event (a failed
// upstream call, a retry, a deployment cooling down), naming the provider and model, the status
// the client gets, the reason with any secret cut out, and the request id (the request's
// Cancellation carries it from the HTTP layer: no async context is needed).
import type { Logger } from "../host";
import { SvcError, type ErrorKind } from "../errors";
import { redactSecrets } from "../secrets/redact";
import { traceField } from "../telemetry";
import type { ProviderAdapter, RouteTarget } from "./types";

const STATUS_OF_KIND: Partial<Record<ErrorKind, number>> = { upstream: 502, unavailable: 503, timeout: 504, rate_limited: 429, internal: 500 };

/** The fields every upstream line carries. */
export function upstreamFields(t: RouteTarget, e: unknown, requestId?: string): Record<string, unknown> {
  const err = e as { status?: unknown; code?: unknown; message?: unknown; name?: unknown } | undefined;
  const status = e instanceof SvcError ? STATUS_OF_KIND[e.kind] : typeof err?.status === "number" ? err.status : 502;
  const reason = redactSecrets(String(err?.message ?? e)).slice(0, 500);
  return {
    provider: t.provider,
    model: t.model,
    ...(t.upstreamModel && t.upstreamModel !== t.model ? { upstreamModel: t.upstreamModel } : {}),
    ...(status !== undefined ? { status } : {}),
    ...(e instanceof SvcError ? { code: e.code } : typeof err?.code === "string" ? { code: err.code } : {}),
    reason,
    ...(requestId ? { requestId } : {}),
  };
}

/** A cancelled request (the client went away) is not an upstream failure. */
export function isAbort(e: unknown): boolean {
  const name = (e as { name?: unknown })?.name;
  return typeof name === "string" && name.includes("Abort");
}

/** Is `e` the upstream's (or the serving side's) failure, not the client's mistake? */
function upstreamTrouble(e: unknown): boolean {
  if (e instanceof SvcError) return STATUS_OF_KIND[e.kind] !== undefined;
  const status = (e as { status?: unknown })?.status;
  return typeof status !== "number" || status === 429 || status >= 500;
}

export function logUpstreamFailure(log: Logger | undefined, t: RouteTarget, e: unknown, requestId: string | undefined, extra: Record<string, unknown> = {}, msg = "upstream request failed"): void {
  if (!log || isAbort(e) || !upstreamTrouble(e)) return;
  log.warn(msg, { ...upstreamFields(t, e, requestId), ...extra });
}

/** `a` with a warn line for each call that fails (the error itself goes on unchanged). */
export function withFailureLog(a: ProviderAdapter, log: Logger): ProviderAdapter {
  const out: ProviderAdapter = {
    async chat(t, req, cancel) {
      try {
        return await a.chat(t, req, cancel);
      } catch (e) {
        if (!cancel.aborted) logUpstreamFailure(log, t, e, cancel.requestId, traceField(cancel.trace));
        throw e;
      }
    },
  };
  if (a.embed) {
    out.embed = async (t, req, cancel) => {
      try {
        return await a.embed!(t, req, cancel);
      } catch (e) {
        if (!cancel?.aborted) logUpstreamFailure(log, t, e, cancel?.requestId, traceField(cancel?.trace));
        throw e;
      }
    };
  }
  return out;
}
