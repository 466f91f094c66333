// The response cache's administration (docs/cache.md), loopback only like all of /admin:
//   GET  /admin/response-cache         entries, bytes, hits, misses, bypasses and spend saved
//   POST /admin/response-cache/purge   drop a model's answers, a key's, or all ({model?, key?})
// `svc cache stats|purge` calls these.
import Router from "@koa/router";
import type { Context } from "koa";
import type { Svc } from "../../engines/svc";
import { SvcError } from "../../engines/errors";
import { loopbackOnly } from "../loopback";
import { jsonBody } from "../body-schema";
import { CachePurgeBody } from "../../schemas/api/cache";
import type { CacheCounters, CacheStats } from "../../engines/cache";

const readPurge = jsonBody("post", "/admin/response-cache/purge", CachePurgeBody);

function cacheOf(svc: Svc) {
  const c = svc.engines.gateway?.cache;
  if (!c) throw new SvcError("unavailable", "model_unavailable", "the response cache is unavailable: the gateway engine is not running");
  return c;
}

/** Stats as the API shows them: spend in USD, snake_case. */
export function statsBody(s: CacheStats) {
  const rate = (h: number, m: number) => (h + m === 0 ? 0 : h / (h + m));
  return {
    mode: s.mode,
    entries: s.entries,
    bytes: s.bytes,
    hits: s.hits,
    misses: s.misses,
    bypassed: s.bypassed,
    hit_rate: rate(s.hits, s.misses),
    saved_usd: s.savedUsdMicros / 1e6,
    models: Object.entries(s.models).map(([model, c]) => ({ model, hits: c.hits, misses: c.misses, bypassed: c.bypassed, hit_rate: rate(c.hits, c.misses), saved_usd: c.savedUsdMicros / 1e6 })),
  };
}

/** The response cache's counters in GET /v1/usage (the administrative key; in shared mode every replica's). */
export function cacheUsage(c: CacheCounters) {
  return { hits: c.hits, misses: c.misses, bypassed: c.bypassed, hit_rate: c.hits + c.misses === 0 ? 0 : c.hits / (c.hits + c.misses), saved_usd: c.savedUsdMicros / 1e6 };
}

export default function cacheRoutes(svc: Svc): Router {
  const r = new Router();

  r.get("/admin/response-cache", loopbackOnly, async (ctx: Context) => {
    ctx.body = statsBody(await cacheOf(svc).stats());
  });

  r.post("/admin/response-cache/purge", loopbackOnly, async (ctx: Context) => {
    const b = await readPurge(ctx);
    const purged = await cacheOf(svc).purge({ model: b.model, keyId: b.key });
    ctx.body = { purged };
  });

  return r;
}
