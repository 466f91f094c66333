// Shared HTTP plumbing for upstream providers: one keep-alive undici Pool per origin, and the
// mapping of upstream failures to clear gateway errors.
//   connection refused/reset, DNS         -> 502 upstream_error  "provider X unreachable: …"
//   no answer within timeoutSeconds        -> 504 upstream_timeout
//   upstream 429                           -> 429 rate_limit_exceeded (Retry-After passed on)
//   upstream 400/413/422                   -> 400 invalid_request "provider X refused the request: …"
//   upstream 401/403                       -> 502 upstream_error (the gateway's credential is wrong)
//   upstream other 4xx / 5xx               -> 502 upstream_error "provider X answered N: …"
// 502/503/504 are "fallback-able": routing may try the next provider when fallback is on.
// Every message built from upstream text goes through upstreamError, which redacts secrets
// (redact.ts): an upstream that echoes our credential never hands it to the caller.
import { SvcError, type ErrorCode, type ErrorKind, type LimitData } from "../errors";
import type { IncomingHttpHeaders } from "node:http";
import { Pool, type Dispatcher } from "undici";
import { createParser } from "eventsource-parser";
import type { Cancellation } from "../chat/cancel";
import { redactSecrets } from "./redact";
import { outboundConnect } from "../net/outbound-guard";
import { within } from "../../prisma/waits";
import { endUpstream, endUpstreamWithBody, upstreamSpan, type UpstreamSpan } from "./trace-http";

const pools = new Map<string, Pool>();

export function poolFor(origin: string): Pool {
  let p = pools.get(origin);
  if (!p) {
    p = new Pool(origin, { connections: 256, pipelining: 1, keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000, ...outboundConnect() });
    pools.set(origin, p);
  }
  return p;
}

/** Close every pool. A pool's close() waits for its requests in flight, and the pools belong to
 * the process, not to one svc: where several run in one process (the replicas of a test), one's
 * shutdown waited on the others' upstream calls until their timeout. By the time the gateway
 * closes, its listener has drained and its tasks have ended, so a request still in flight after
 * `graceMs` answers nobody here: it is cut. */
export async function closePools(graceMs = 1000): Promise<void> {
  const all = [...pools.values()];
  pools.clear();
  await Promise.all(all.map(async (p) => {
    if (!(await within(p.close(), graceMs))) await p.destroy().catch(() => undefined);
  }));
}

const splits = new Map<string, { origin: string; prefix: string }>();

/** Split a base URL into origin and path prefix (no trailing slash). Memoized: base URLs come
 * from configuration (a handful), and URL parsing was a visible per-request cost. */
export function splitUrl(base: string): { origin: string; prefix: string } {
  let s = splits.get(base);
  if (!s) {
    const u = new URL(base);
    s = Object.freeze({ origin: u.origin, prefix: u.pathname.replace(/\/+$/, "") });
    if (splits.size >= 1024) splits.clear();
    splits.set(base, s);
  }
  return s;
}

/** A SvcError whose message holds upstream text: the one place such text is redacted. */
export function upstreamError(kind: ErrorKind, code: ErrorCode, message: string, limit: LimitData = {}): SvcError {
  return new SvcError(kind, code, redactSecrets(message), null, limit);
}

/** What an upstream's answer status means for svc's caller (its own media answers pass through
 * this; chat's go through statusError). Upstream statuses are read here and where an answer is
 * parsed, never turned into the client's status by an engine. */
const UPSTREAM_KIND: Record<number, ErrorKind> = {
  400: "invalid",
  401: "unauthenticated",
  402: "payment",
  403: "forbidden",
  404: "not_found",
  405: "method_not_allowed",
  408: "timeout",
  409: "conflict",
  410: "gone",
  413: "too_large",
  422: "invalid",
  426: "upgrade_required",
  429: "rate_limited",
};
export function kindOfUpstreamStatus(status: number): ErrorKind {
  return status >= 500 ? "upstream" : (UPSTREAM_KIND[status] ?? "invalid");
}

/** An upstream's Retry-After (seconds, or an HTTP date) as seconds to wait. */
function retryAfterOf(v: string | string[] | undefined): number | undefined {
  const s = Array.isArray(v) ? v[0] : v;
  if (!s) return undefined;
  const n = Number(s);
  if (Number.isFinite(n)) return Math.max(0, Math.ceil(n));
  const at = Date.parse(s);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

export function isAbort(e: any, cancel?: Cancellation): boolean {
  return cancel?.aborted === true || e?.name === "AbortError" || e?.code === "UND_ERR_ABORTED";
}

/** Map a thrown transport error. */
export function transportError(provider: string, e: any, timeoutMs: number, midStream = false): SvcError {
  const code: string = e?.code ?? e?.cause?.code ?? "";
  if (code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_BODY_TIMEOUT" || code === "UND_ERR_CONNECT_TIMEOUT" || e?.name === "TimeoutError") {
    return new SvcError("timeout", "upstream_timeout", `provider ${provider} did not answer within ${Math.round(timeoutMs / 1000)}s`);
  }
  const why = code ? `${code}${e?.message && !String(e.message).includes(code) ? ` (${e.message})` : ""}` : String(e?.message ?? e);
  return upstreamError("upstream", "upstream_error", midStream ? `connection to provider ${provider} failed mid-response: ${why}` : `provider ${provider} unreachable: ${why}`);
}

/** Upstream text fit for a message: redacted first, then cut to `max` (so no secret is left half). */
export function upstreamText(text: string, max: number): string {
  return redactSecrets(text.slice(0, 8192)).slice(0, max);
}

/** The message of an upstream error body. */
function upstreamMessage(body: string): string {
  try {
    const j = JSON.parse(body);
    const m = j?.error?.message ?? j?.message ?? j?.error;
    if (typeof m === "string") return upstreamText(m, 500);
  } catch {
    /* not JSON */
  }
  return upstreamText(body, 200).trim() || "(empty body)";
}

/** Google's 429s (Gemini, Vertex) give the wait in the body, not in a Retry-After header:
 * error.details[] holds a google.rpc.RetryInfo with retryDelay "7s" (or "0.5s"). */
function retryInfoOf(body: string): number | undefined {
  if (!body.includes("RetryInfo")) return undefined;
  try {
    const details = JSON.parse(body)?.error?.details;
    for (const d of Array.isArray(details) ? details : []) {
      const m = typeof d?.["@type"] === "string" && d["@type"].endsWith("google.rpc.RetryInfo") ? /^(\d+(?:\.\d+)?)s$/.exec(String(d.retryDelay ?? "")) : null;
      if (m) return Math.ceil(Number(m[1]));
    }
  } catch {
    /* not JSON */
  }
  return undefined;
}

/** Map a non-2xx upstream answer. */
export function statusError(provider: string, status: number, body: string, headers: Dispatcher.ResponseData["headers"]): SvcError {
  const msg = upstreamMessage(body);
  if (status === 429) {
    const ra = retryAfterOf(headers["retry-after"]) ?? retryInfoOf(body);
    return upstreamError("rate_limited", "rate_limit_exceeded", `provider ${provider} rate limited the request: ${msg}`, ra !== undefined ? { retryAfterSeconds: ra } : {});
  }
  if (status === 400 || status === 413 || status === 422) {
    return upstreamError("invalid", "invalid_request", `provider ${provider} refused the request: ${msg}`);
  }
  if (status === 401 || status === 403) {
    return upstreamError("upstream", "upstream_error", `provider ${provider} rejected the gateway's credential (${status}): ${msg}`);
  }
  if (status === 504 || status === 408) return upstreamError("timeout", "upstream_timeout", `provider ${provider} timed out (${status}): ${msg}`);
  return upstreamError("upstream", "upstream_error", `provider ${provider} answered ${status}: ${msg}`);
}

/** May the router try the next provider after this failure? */
export function isFallbackable(e: unknown): boolean {
  if (e instanceof SvcError) return e.kind === "upstream" || e.kind === "unavailable" || e.kind === "timeout";
  const x = e as { status?: unknown; name?: unknown } | undefined;
  if (typeof x?.status === "number") return x.status >= 500;
  return !(typeof x?.name === "string" && x.name.includes("Abort"));
}

/** The pool and options of a JSON POST upstream (postJson and postForJson). */
function jsonPost(baseUrl: string, path: string, accept: string, headers: Record<string, string>, body: unknown, timeoutMs: number, up?: UpstreamSpan) {
  const { origin, prefix } = splitUrl(baseUrl);
  const opts: Dispatcher.DispatchOptions = {
    method: "POST",
    path: prefix + path,
    headers: up ? { "content-type": "application/json", accept, ...headers, ...up.headers } : { "content-type": "application/json", accept, ...headers },
    // a string is sent as it is (a signed body must be the bytes that were signed)
    body: typeof body === "string" ? body : JSON.stringify(body),
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  };
  return { pool: poolFor(origin), opts };
}

/** POST JSON upstream; resolves with the response once the status is 2xx, else throws mapped. */
export async function postJson(
  provider: string,
  baseUrl: string,
  path: string,
  headers: Record<string, string>,
  body: unknown,
  timeoutMs: number,
  cancel?: Cancellation,
): Promise<Dispatcher.ResponseData> {
  const up = cancel?.trace ? upstreamSpan(cancel.trace, provider, baseUrl, path) : undefined;
  const { pool, opts } = jsonPost(baseUrl, path, "application/json, text/event-stream", headers, body, timeoutMs, up);
  let res: Dispatcher.ResponseData;
  try {
    res = await pool.request({ ...opts, signal: cancel }); // an EventEmitter: cheaper than an AbortSignal per request
  } catch (e) {
    const err = isAbort(e, cancel) ? e : transportError(provider, e, timeoutMs);
    if (up) endUpstream(up, undefined, err);
    throw err;
  }
  if (res.statusCode >= 200 && res.statusCode < 300) {
    if (up) endUpstreamWithBody(up, res.statusCode, res.body); // ends when the body (a stream) is done
    return res;
  }
  let text = "";
  try {
    text = await res.body.text();
  } catch {
    /* ignore */
  }
  const err = statusError(provider, res.statusCode, text, res.headers);
  if (up) endUpstream(up, res.statusCode, err);
  throw err;
}

/** POST JSON upstream and resolve with the whole JSON answer (non-streaming requests). Goes
 * through undici's dispatch with a collecting handler rather than request(): no response stream
 * object per request, which showed in the gateway's per-request cost. Failures map as postJson's. */
export function postForJson(
  provider: string,
  baseUrl: string,
  path: string,
  headers: Record<string, string>,
  body: unknown,
  timeoutMs: number,
  cancel?: Cancellation,
): Promise<any> {
  return collectJson(provider, baseUrl, path, headers, body, timeoutMs, cancel, false);
}

/** postForJson that also keeps the body's text (an answer svc may pass through unchanged). */
export function postForJsonText(
  provider: string,
  baseUrl: string,
  path: string,
  headers: Record<string, string>,
  body: unknown,
  timeoutMs: number,
  cancel?: Cancellation,
): Promise<{ json: any; text: string }> {
  return collectJson(provider, baseUrl, path, headers, body, timeoutMs, cancel, true);
}

function collectJson(provider: string, baseUrl: string, path: string, headers: Record<string, string>, body: unknown, timeoutMs: number, cancel: Cancellation | undefined, withText: boolean): Promise<any> {
  const up = cancel?.trace ? upstreamSpan(cancel.trace, provider, baseUrl, path) : undefined;
  const { pool, opts } = jsonPost(baseUrl, path, "application/json", headers, body, timeoutMs, up);
  return new Promise((resolve, reject) => {
    const c = new JsonCollector(provider, timeoutMs, cancel, resolve, reject, withText);
    if (up) c.traced(up);
    pool.dispatch(opts, c);
  });
}

function abortCollector(this: JsonCollector): void {
  this.abort();
}

class JsonCollector implements Dispatcher.DispatchHandler {
  private status = 0;
  private headers: IncomingHttpHeaders = {};
  private readonly chunks: Buffer[] = [];
  private controller?: Dispatcher.DispatchController;
  private readonly onCancel: () => void;

  constructor(
    private readonly provider: string,
    private readonly timeoutMs: number,
    private readonly cancel: Cancellation | undefined,
    private resolve: (json: any) => void,
    private reject: (e: unknown) => void,
    /** resolve with { json, text } */
    private readonly withText = false,
  ) {
    // bound, not an arrow field: tsx's keepNames wraps every named closure it creates per request
    this.onCancel = abortCollector.bind(this);
    cancel?.once("abort", this.onCancel);
  }

  abort(): void {
    this.controller?.abort(this.cancel!.reason as Error);
  }

  /** end the attempt's client span with the answer (tracing on only) */
  traced(up: UpstreamSpan): void {
    const { resolve, reject } = this;
    this.resolve = (json) => {
      endUpstream(up, this.status);
      resolve(json);
    };
    this.reject = (e) => {
      endUpstream(up, this.status || undefined, e);
      reject(e);
    };
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.cancel?.aborted) controller.abort(this.cancel.reason as Error);
  }

  onResponseStart(_c: Dispatcher.DispatchController, status: number, headers: IncomingHttpHeaders): void {
    this.status = status;
    this.headers = headers;
  }

  onResponseData(_c: Dispatcher.DispatchController, chunk: Buffer): void {
    this.chunks.push(chunk);
  }

  onResponseEnd(): void {
    this.cancel?.off("abort", this.onCancel);
    const text = (this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks)).toString("utf8");
    if (this.status < 200 || this.status >= 300) return this.reject(statusError(this.provider, this.status, text, this.headers));
    let json: any;
    try {
      json = parseUpstreamJson(this.provider, text);
    } catch (e) {
      return this.reject(e);
    }
    this.resolve(this.withText ? { json, text } : json);
  }

  onResponseError(_c: Dispatcher.DispatchController, e: Error): void {
    this.cancel?.off("abort", this.onCancel);
    this.reject(isAbort(e, this.cancel) ? e : transportError(this.provider, e, this.timeoutMs, this.status !== 0));
  }
}

/** Read a whole JSON body, mapping transport failures. */
export async function readJsonBody(provider: string, res: Dispatcher.ResponseData, timeoutMs: number, cancel?: Cancellation): Promise<any> {
  let text: string;
  try {
    text = await res.body.text();
  } catch (e) {
    if (isAbort(e, cancel)) throw e;
    throw transportError(provider, e, timeoutMs, true);
  }
  return parseUpstreamJson(provider, text);
}

/** Parse an upstream's JSON answer; anything else is a 502 naming the provider. */
function parseUpstreamJson(provider: string, text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    throw upstreamError("upstream", "upstream_error", `provider ${provider} sent a body that is not JSON: ${upstreamText(text, 120)}`);
  }
}

/** Iterate the SSE messages of a response body (eventsource-parser), mapping transport failures. */
export async function* sseMessages(
  provider: string,
  res: Dispatcher.ResponseData,
  timeoutMs: number,
  cancel?: Cancellation,
): AsyncGenerator<{ event?: string; data: string }> {
  const queue: { event?: string; data: string }[] = [];
  const parser = createParser({ onEvent: (m) => queue.push({ event: m.event, data: m.data }) });
  const dec = new TextDecoder();
  try {
    for await (const chunk of res.body) {
      parser.feed(dec.decode(chunk as Buffer, { stream: true }));
      while (queue.length) yield queue.shift()!;
    }
    parser.feed(dec.decode());
    parser.reset({ consume: true });
    while (queue.length) yield queue.shift()!;
  } catch (e) {
    if (isAbort(e, cancel)) throw e;
    throw transportError(provider, e, timeoutMs, true);
  } finally {
    // stop the upstream if the consumer left early
    if (!res.body.readableEnded && !res.body.destroyed) res.body.destroy();
  }
}
