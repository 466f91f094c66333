// Failed exports in svc's log. The SDK's batch span processor and svc's own (encoding-processor.ts)
// hand a failed export (a collector that is down, refuses, or answers too late) to OpenTelemetry's
// global error handler, whose default writes to the diag logger, and svc registers none: an
// operator whose collector was unreachable saw nothing. While tracing runs, this handler writes
// them to svc's log as warnings: the first at once, then at most one a minute with the number held
// back since (a collector that is down fails every batch).
import { loggingErrorHandler, setGlobalErrorHandler } from "@opentelemetry/core";

export type Warn = (msg: string, fields?: Record<string, unknown>) => void;

/** Installs the handler; returns what restores OpenTelemetry's default. */
export function reportExportErrors(warn: Warn, everyMs = 60_000, now: () => number = Date.now): () => void {
  let last = -Infinity;
  let held = 0;
  setGlobalErrorHandler((e) => {
    const t = now();
    if (t - last < everyMs) {
      held++;
      return;
    }
    last = t;
    const err = String((e as Error | undefined)?.message ?? e).slice(0, 300);
    warn("tracing: spans could not be exported", { err, ...(held > 0 ? { heldBack: held } : {}) });
    held = 0;
  });
  return () => setGlobalErrorHandler(loggingErrorHandler());
}
