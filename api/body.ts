// JSON bodies: size-limited, parsed once, depth- and metadata-bounded (api/json-bounds.ts), clear
// 400/413 errors (never a stack trace).
import getRawBody from "raw-body";
import type { HttpContext } from "./http-context";
import { SvcError } from "../engines/errors";
import { checkJsonBounds } from "./json-bounds";

export const DEFAULT_BODY_LIMIT = 4 * 1024 * 1024;

export async function readRaw(ctx: HttpContext, limit = DEFAULT_BODY_LIMIT): Promise<Buffer> {
  try {
    return await getRawBody(ctx.req, { limit, length: ctx.get("content-length") || undefined });
  } catch (e: any) {
    if (e?.type === "entity.too.large") throw new SvcError("too_large", "invalid_request", `request body exceeds ${limit} bytes`);
    throw new SvcError("invalid", "invalid_request", `could not read request body: ${e?.message ?? e}`);
  }
}

/** Read and parse a JSON object body. */
export async function readJson<T = any>(ctx: HttpContext, limit?: number): Promise<T> {
  const cached = (ctx.state as any).jsonBody;
  if (cached !== undefined) return cached;
  const raw = await readRaw(ctx, limit ?? (ctx.state as any).bodyLimit);
  if (raw.length === 0) throw new SvcError("invalid", "invalid_request", "request body is empty; expected a JSON object");
  let body: unknown;
  try {
    body = JSON.parse(raw.toString("utf8"));
  } catch (e: any) {
    throw new SvcError("invalid", "invalid_request", `request body is not valid JSON: ${e.message}`);
  }
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw new SvcError("invalid", "invalid_request", "request body must be a JSON object");
  }
  checkJsonBounds(body as Record<string, unknown>);
  (ctx.state as any).jsonBody = body;
  return body as T;
}
