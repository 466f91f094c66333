// JSON bodies: size-limited, parsed once, depth- and metadata-bounded (api/json-bounds.ts), clear
// 400/413 errors (never a stack trace).
import { readBody } from "./body-reader";
import type { HttpContext } from "./http-context";
import { SvcError } from "../engines/errors";
import { checkJsonBounds } from "./json-bounds";

export const DEFAULT_BODY_LIMIT = 4 * 1024 * 1024;

export async function readRaw(ctx: HttpContext, limit = DEFAULT_BODY_LIMIT): Promise<Buffer> {
  try {
    return await readBody(ctx.req, limit, ctx.req.headers["content-length"]);
  } catch (e: any) {
    throw unreadable(e, limit);
  }
}

function unreadable(e: any, limit: number): SvcError {
  if (e?.type === "entity.too.large") return new SvcError("too_large", "invalid_request", `request body exceeds ${limit} bytes`);
  return new SvcError("invalid", "invalid_request", `could not read request body: ${e?.message ?? e}`);
}

/** Read and parse a JSON object body; `check` (a schema's, api/body-schema.ts) runs on it before
 * it is returned, here rather than in a wrapper so a request awaits one promise, not two. */
export async function readJson<T = any>(ctx: HttpContext, limit?: number, check?: (body: unknown) => void): Promise<T> {
  const cached = (ctx.state as any).jsonBody;
  if (cached !== undefined) {
    check?.(cached);
    return cached;
  }
  // readBody awaited here, not through readRaw: one async layer less on every inference request
  const max: number = limit ?? (ctx.state as any).bodyLimit ?? DEFAULT_BODY_LIMIT;
  let raw: Buffer;
  try {
    raw = await readBody(ctx.req, max, ctx.req.headers["content-length"]);
  } catch (e) {
    throw unreadable(e, max);
  }
  if (raw.length === 0) throw new SvcError("invalid", "invalid_request", "request body is empty; expected a JSON object");
  const text = raw.toString("utf8");
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (e: any) {
    throw new SvcError("invalid", "invalid_request", `request body is not valid JSON: ${e.message}`);
  }
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw new SvcError("invalid", "invalid_request", "request body must be a JSON object");
  }
  checkJsonBounds(body as Record<string, unknown>);
  // UTF-8 bytes decode to well-formed text; only a \uD800-style escape can make a lone surrogate
  if (text.includes("\\u")) checkWellFormed(body as Record<string, unknown>);
  (ctx.state as any).jsonBody = body;
  check?.(body);
  return body as T;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Strings (and keys) holding a lone UTF-16 surrogate are no text: they cannot be stored, encoded
 * as UTF-8 or put in a URL, so they are refused here, once, with the field they are in. */
function checkWellFormed(body: Record<string, unknown>): void {
  const walk = (v: unknown, where: string): void => {
    if (typeof v === "string") {
      if (LONE_SURROGATE.test(v)) throw new SvcError("invalid", "invalid_request", `field ${where} holds a lone UTF-16 surrogate (an unpaired \\uD800-\\uDFFF escape); send valid Unicode text`, where);
    } else if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) walk(v[i], `${where}/${i}`);
    } else if (v !== null && typeof v === "object") {
      for (const k in v as Record<string, unknown>) {
        if (LONE_SURROGATE.test(k)) throw new SvcError("invalid", "invalid_request", `a field name in ${where || "the body"} holds a lone UTF-16 surrogate; send valid Unicode text`, where || null);
        walk((v as Record<string, unknown>)[k], `${where}/${k}`);
      }
    }
  };
  walk(body, "");
}
