// The response cache over HTTP (docs/cache.md): the request's Cache-Control read into the
// pipeline's directives, and x-svc-cache: hit | miss | bypass on the answer of a cached model.
import type { CacheDirectives, CacheState } from "../engines/cache/types";

/** no-store: neither read nor write; no-cache: do not answer from the cache (the fresh answer is
 * stored); max-age=N: answer only from an entry at most N seconds old. Unknown directives are
 * ignored, as HTTP caches do. */
export function cacheDirectivesOf(header: string): CacheDirectives | undefined {
  let d: CacheDirectives | undefined;
  for (const part of header.toLowerCase().split(",")) {
    const [name, value] = part.trim().split("=", 2);
    if (name === "no-store") (d ??= {}).noStore = true;
    else if (name === "no-cache") (d ??= {}).noCache = true;
    else if (name === "max-age" && value !== undefined && /^\d+$/.test(value.trim().replace(/^"|"$/g, ""))) (d ??= {}).maxAgeSeconds = Number(value.trim().replace(/^"|"$/g, ""));
  }
  return d;
}

/** Add x-svc-cache to a response's headers (nothing when the model is not cached). */
export function withCacheHeader(h: Record<string, string>, state: CacheState | undefined): Record<string, string> {
  if (state) h["x-svc-cache"] = state;
  return h;
}
