// Error middleware: every failure leaves as JSON {error:{message,type,code,param}} with the
// right status. Unknown errors become a 500 with a generic message; details go to the log only.
import type { Context, Next } from "koa";
import type { HttpContext } from "./http-context";
import { GatewayError } from "../engines/gateway/errors";
import type { Logger } from "../engines/svc";

export type ErrorRenderer = (ctx: HttpContext, err: GatewayError) => void;

export const renderOpenAI: ErrorRenderer = (ctx, err) => {
  ctx.status = err.status;
  for (const [k, v] of Object.entries(err.headers)) ctx.set(k, v);
  ctx.body = err.toOpenAI();
};

/** Normalize anything thrown into a GatewayError (koa/http-errors carry status/expose). */
export function toGatewayError(e: any): GatewayError {
  if (e instanceof GatewayError) return e;
  // Errors from engines that carry a code/status of their own (e.g. InferenceError).
  if (e && typeof e.status === "number" && typeof e.code === "string" && e.status < 600) {
    return new GatewayError(e.status, e.code, e.message);
  }
  if (e && typeof e.status === "number" && e.expose) {
    const code = e.status === 404 ? "not_found" : e.status === 413 ? "invalid_request" : "invalid_request";
    return new GatewayError(e.status, code, e.message);
  }
  return new GatewayError(500, "internal_error", "internal server error");
}

/** Turn a failure into the protocol's error response (or drop the connection when a response
 * was already under way). Unexpected errors are logged with their stack; clients get a 500. */
export function renderFailure(ctx: HttpContext, e: any, log: Logger, render: ErrorRenderer = renderOpenAI): void {
  const err = toGatewayError(e);
  if (err.status >= 500 && !(e instanceof GatewayError)) {
    log.error("request failed", { method: ctx.method, path: ctx.path, err: String(e?.stack ?? e) });
  }
  if (ctx.headerSent || !ctx.writable) {
    ctx.res.destroy();
    return;
  }
  ((ctx.state as any).renderError as ErrorRenderer | undefined ?? render)(ctx, err);
}

export function errorMiddleware(log: Logger, render: ErrorRenderer = renderOpenAI) {
  return async (ctx: Context, next: Next) => {
    try {
      await next();
    } catch (e: any) {
      renderFailure(ctx, e, log, render);
    }
  };
}
