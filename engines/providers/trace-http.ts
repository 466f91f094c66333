// The client span of one upstream HTTP attempt (a retry, a fallback and a routed deployment each
// make their own), a child of the model call's span, whose W3C traceparent the upstream receives.
// Made only when the call carries a span (Cancellation.trace: tracing is on).
import { tracing, type Span } from "../telemetry";

export interface UpstreamSpan {
  span: Span;
  /** traceparent (and tracestate) for the request's headers */
  headers: Record<string, string>;
}

export function upstreamSpan(parent: Span, provider: string, baseUrl: string, path: string): UpstreamSpan {
  const sp = tracing.spans!;
  const u = new URL(baseUrl);
  const span = sp.child(parent, "POST", "client", {
    "http.request.method": "POST",
    "server.address": u.hostname,
    "server.port": Number(u.port || (u.protocol === "https:" ? 443 : 80)),
    "url.full": u.origin + u.pathname.replace(/\/+$/, "") + path.split("?")[0],
    "svc.provider": provider,
  });
  return { span, headers: sp.headers(span) };
}

/** The attempt's answer (status) or its failure. */
export function endUpstream(u: UpstreamSpan, status: number | undefined, error?: unknown): void {
  tracing.spans!.end(u.span, { "http.response.status_code": status }, error);
}
