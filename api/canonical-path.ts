// The one canonical form of a request path, decided before any check or route match (the Host
// rule, CORS, the admin checks, the inference listener and the Koa router all read it), so no
// spelling of a path can pass a check as one route and be routed as another:
//   - percent-encoded unreserved characters are decoded (%61dmin is admin, %2E%2E is ..); every
//     other escape keeps its meaning as data, upper-cased: %2F never becomes a separator, so
//     /admin%2Fconfig is one segment (no route), and a model id such as org%2Fname stays one id;
//   - empty segments (//), "." and ".." are resolved, never above the root;
//   - a trailing "/" is dropped;
//   - case is kept (ids are case-sensitive), and route families are compared on `lower`, the
//     form the case-insensitive router matches.
// A malformed escape (%zz) or a target that is not an absolute path (a proxy's absolute-form
// URL) is a 400 before anything runs.
import type { IncomingMessage } from "node:http";
import { SvcError } from "../engines/errors";

export interface CanonicalTarget {
  /** the canonical path, case kept */
  path: string;
  /** `path` lower-cased: what route families and the case-insensitive router compare */
  lower: string;
}

const UNRESERVED = /[A-Za-z0-9\-._~]/;

function badPath(why: string): SvcError {
  return new SvcError("invalid", "invalid_request", `request path ${why}`, "path");
}

/** One segment with unreserved escapes decoded and the others upper-cased. */
function segmentOf(seg: string): string {
  if (!seg.includes("%")) return seg;
  let out = "";
  for (let i = 0; i < seg.length; i++) {
    const c = seg[i];
    if (c !== "%") {
      out += c;
      continue;
    }
    const hex = seg.slice(i + 1, i + 3);
    if (!/^[0-9A-Fa-f]{2}$/.test(hex)) throw badPath(`has a malformed percent-escape near ${JSON.stringify(seg.slice(i, i + 3))}`);
    const ch = String.fromCharCode(parseInt(hex, 16));
    out += UNRESERVED.test(ch) ? ch : `%${hex.toUpperCase()}`;
    i += 2;
  }
  return out;
}

/** The canonical form of a path (no query string). Throws 400 for a malformed one. */
export function canonicalPath(raw: string): string {
  if (!raw.startsWith("/")) throw badPath("must be an absolute path such as /v1/models");
  // the common case: nothing to normalize
  if (!raw.includes("%") && !raw.includes("//") && !raw.includes("/.") && (raw.length === 1 || !raw.endsWith("/"))) return raw;
  const out: string[] = [];
  for (const part of raw.split("/")) {
    const seg = segmentOf(part);
    if (seg === "" || seg === ".") continue;
    if (seg === "..") out.pop();
    else out.push(seg);
  }
  return "/" + out.join("/");
}

/** The request target split into its canonical path and its query string ("" or "?…"). */
export function canonicalTarget(url: string): { path: string; query: string } {
  const q = url.indexOf("?");
  const path = canonicalPath(q < 0 ? url : url.slice(0, q));
  return { path, query: q < 0 ? "" : url.slice(q) };
}

const kCanonical = Symbol("svc.canonicalPath");

/** Canonicalize a request once: req.url is rewritten to the canonical path (query kept), so Koa,
 * the router and every check see the same string. Throws 400 for a malformed target. */
export function canonicalize(req: IncomingMessage): CanonicalTarget {
  const known = (req as any)[kCanonical] as CanonicalTarget | undefined;
  if (known) return known;
  const { path, query } = canonicalTarget(req.url ?? "/");
  req.url = path + query;
  const t: CanonicalTarget = { path, lower: path.toLowerCase() };
  (req as any)[kCanonical] = t;
  return t;
}

/** Administration routes: /admin and below, in any spelling. */
export function isAdminPath(lower: string): boolean {
  return lower === "/admin" || lower.startsWith("/admin/");
}
