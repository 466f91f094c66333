// What route code needs from a request context: the subset of Koa's Context the inference
// routes, body reader, SSE writer and error renderers use. Koa's Context satisfies it, and so
// does LeanContext (api/inference-listener.ts), which serves the inference hot routes without
// Koa's per-request object graph, middleware composition and router scan.
import type { IncomingMessage, ServerResponse } from "node:http";

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

/** A request context for the inference hot routes: plain fields, headers read from the request,
 * response headers set straight on the response. */
export class LeanContext implements HttpContext {
  status = 200;
  body: unknown = undefined;
  respond = true;
  readonly state: Record<string, any> = {};

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly path: string,
  ) {}

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
    this.res.setHeader(field, value);
  }

  get headerSent(): boolean {
    return this.res.headersSent;
  }

  get writable(): boolean {
    if (this.res.writableEnded) return false;
    const socket = this.res.socket;
    return !socket || socket.writable;
  }
}

const JSON_TYPE = "application/json; charset=utf-8";

/** Write ctx.body as the response, the way Koa's respond step does for the bodies routes set
 * (a JSON value, a string or a Buffer), unless the route took the response over. */
export function sendBody(ctx: LeanContext): void {
  const res = ctx.res;
  if (ctx.respond === false || res.writableEnded || res.destroyed) return;
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
