// The client span of one upstream HTTP attempt (a retry, a fallback and a routed deployment each
// make their own), a child of the model call's span, whose W3C traceparent the upstream receives.
// Made only when the call carries a span (Cancellation.trace: tracing is on).
import { attr, tracing, type Span } from "../telemetry";

export interface UpstreamSpan {
  span: Span;
  /** traceparent (and tracestate) for the request's headers */
  headers: Record<string, string>;
}

/** A base URL's parts as the span shows them, parsed once per base URL (a few per server). */
interface Target { address: string; port: number; base: string }
const targets = new Map<string, Target>();

function targetOf(baseUrl: string): Target {
  let t = targets.get(baseUrl);
  if (!t) {
    const u = new URL(baseUrl);
    t = { address: u.hostname, port: Number(u.port || (u.protocol === "https:" ? 443 : 80)), base: u.origin + u.pathname.replace(/\/+$/, "") };
    if (targets.size > 1000) targets.clear(); // bounded: base URLs come from manifests
    targets.set(baseUrl, t);
  }
  return t;
}

export function upstreamSpan(parent: Span, provider: string, baseUrl: string, path: string): UpstreamSpan {
  const sp = tracing.spans!;
  const t = targetOf(baseUrl);
  const q = path.indexOf("?");
  const span = sp.child(parent, "POST", "client");
  if (!span.isRecording()) return { span, headers: sp.headers(span) }; // sampled out: still propagated
  span.setAttribute("http.request.method", "POST");
  span.setAttribute("server.address", t.address);
  span.setAttribute("server.port", t.port);
  span.setAttribute("url.full", t.base + (q < 0 ? path : path.slice(0, q)));
  span.setAttribute("svc.provider", provider);
  return { span, headers: sp.headers(span) };
}

/** The attempt's answer (status) or its failure. */
export function endUpstream(u: UpstreamSpan, status: number | undefined, error?: unknown): void {
  if (!u.span.isRecording()) return;
  attr(u.span, "http.response.status_code", status);
  tracing.spans!.end(u.span, undefined, error);
}

/** A 2xx answer whose body is read later (a stream): the attempt's span ends when the body is
 * done (read to its end, or broken: then with the failure), not when its headers arrive. */
export function endUpstreamWithBody(u: UpstreamSpan, status: number, body: NodeJS.EventEmitter): void {
  if (!u.span.isRecording()) return;
  let failed: unknown;
  body.once("error", (e: unknown) => (failed = e));
  body.once("close", () => endUpstream(u, status, failed));
}
