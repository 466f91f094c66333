// What route code needs from a request context: the subset of Koa's Context the inference
// routes, body reader, SSE writer and error renderers use. Koa's Context satisfies it, and so
// does LeanContext (api/inference-listener.ts), which serves the inference hot routes without
// Koa's per-request object graph, middleware composition and router scan.
import { validateHeaderName, validateHeaderValue, type IncomingMessage, type ServerResponse } from "node:http";

export interface HttpContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly method: string;
  readonly path: string;
  /** request header, "" when absent */
  get(field: string): string;
  set(field: string, value: string): void;
  status: number;
  body: unknown;
  state: any;
  /** false: the route wrote (or dropped) the response itself */
  respond?: boolean;
  readonly headerSent: boolean;
  readonly writable: boolean;
  /** the route pattern that matched (set by @koa/router; LeanContext sets its route path) */
  _matchedRoute?: string | RegExp;
}

/** A request context for the inference hot routes: plain fields, headers read from the request.
 * Response headers are gathered in a flat array and written with the answer in one
 * writeHead(status, array) (sendBody), which costs Node less than a setHeader a header; whoever
 * takes `res` itself (a stream, the MCP transport) gets the headers set so far put on it first. */
export class LeanContext implements HttpContext {
  status = 200;
  body: unknown = undefined;
  respond = true;
  readonly state: Record<string, any> = {};
  /** headers set and not yet on the response (lower-case name, value, …); null once handed over */
  pending: string[] | null = [];

  constructor(
    readonly req: IncomingMessage,
    /** the response, for listeners and sendBody: taking it does not hand the headers over */
    readonly raw: ServerResponse,
    readonly path: string,
  ) {}

  get res(): ServerResponse {
    const p = this.pending;
    if (p !== null) {
      this.pending = null;
      for (let i = 0; i < p.length; i += 2) this.raw.setHeader(p[i], p[i + 1]);
    }
    return this.raw;
  }

  get method(): string {
    return this.req.method ?? "GET";
  }

  get _matchedRoute(): string {
    return this.path;
  }

  get(field: string): string {
    const v = this.req.headers[field.toLowerCase()];
    return v === undefined ? "" : Array.isArray(v) ? v.join(", ") : v;
  }

  set(field: string, value: string): void {
    if (this.pending === null) {
      this.raw.setHeader(field, value);
      return;
    }
    // checked here, as setHeader would, so a bad value fails in the route and not in sendBody
    validateHeaderName(field);
    validateHeaderValue(field, value);
    this.setOwn(field.toLowerCase(), value);
  }

  /** set() for a header svc built itself (lower-case name; a checked request id, a number, a
   * fixed word): no regex check here, since writeHead checks the gathered array once anyway. */
  setOwn(name: string, value: string): void {
    const p = this.pending;
    if (p === null) {
      this.raw.setHeader(name, value);
      return;
    }
    for (let i = 0; i < p.length; i += 2) {
      if (p[i] === name) {
        p[i + 1] = value;
        return;
      }
    }
    p.push(name, value);
  }

  get headerSent(): boolean {
    return this.raw.headersSent;
  }

  get writable(): boolean {
    if (this.raw.writableEnded) return false;
    const socket = this.raw.socket;
    return !socket || socket.writable;
  }
}

/** A header svc built itself (see LeanContext.setOwn); lower-case name. */
export function setOwnHeader(ctx: HttpContext, name: string, value: string): void {
  if (ctx instanceof LeanContext) ctx.setOwn(name, value);
  else ctx.set(name, value);
}

/** The response of a context, to listen on (close): a LeanContext keeps its gathered headers. */
export function responseOf(ctx: HttpContext): ServerResponse {
  return ctx instanceof LeanContext ? ctx.raw : ctx.res;
}

const JSON_TYPE = "application/json; charset=utf-8";

function hasPending(p: string[], name: string): boolean {
  for (let i = 0; i < p.length; i += 2) if (p[i] === name) return true;
  return false;
}

/** Write ctx.body as the response, the way Koa's respond step does for the bodies routes set
 * (a JSON value, a string or a Buffer), unless the route took the response over. */
export function sendBody(ctx: LeanContext): void {
  const res = ctx.raw;
  if (ctx.respond === false || res.writableEnded || res.destroyed) return;
  const p = ctx.pending;
  if (p === null) return sendDirect(ctx, res);
  ctx.pending = null; // a throw below (a bad header) must not leave them to a second attempt
  const body = ctx.body;
  if (body === undefined || body === null) {
    res.writeHead(ctx.status, p);
    res.end();
    return;
  }
  let out: string | Buffer;
  if (typeof body === "string") {
    out = body;
    if (!hasPending(p, "content-type") && !res.hasHeader("content-type")) p.push("content-type", "text/plain; charset=utf-8");
  } else if (Buffer.isBuffer(body)) {
    out = body;
    if (!hasPending(p, "content-type") && !res.hasHeader("content-type")) p.push("content-type", "application/octet-stream");
  } else {
    out = JSON.stringify(body);
    setPending(p, "content-type", JSON_TYPE);
  }
  setPending(p, "content-length", String(typeof out === "string" ? Buffer.byteLength(out) : out.length));
  res.writeHead(ctx.status, p);
  res.end(out);
}

function setPending(p: string[], name: string, value: string): void {
  for (let i = 0; i < p.length; i += 2) {
    if (p[i] === name) {
      p[i + 1] = value;
      return;
    }
  }
  p.push(name, value);
}

/** sendBody once the headers were handed to the response (the route took `res`). */
function sendDirect(ctx: LeanContext, res: ServerResponse): void {
  res.statusCode = ctx.status;
  const body = ctx.body;
  if (body === undefined || body === null) {
    res.end();
    return;
  }
  let out: string | Buffer;
  if (typeof body === "string") {
    out = body;
    if (!res.hasHeader("content-type")) res.setHeader("content-type", "text/plain; charset=utf-8");
  } else if (Buffer.isBuffer(body)) {
    out = body;
    if (!res.hasHeader("content-type")) res.setHeader("content-type", "application/octet-stream");
  } else {
    out = JSON.stringify(body);
    res.setHeader("content-type", JSON_TYPE);
  }
  res.setHeader("content-length", typeof out === "string" ? Buffer.byteLength(out) : out.length);
  res.end(out);
}
