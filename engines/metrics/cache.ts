// The response cache's counters (engines/cache), read at scrape time: lookups by model and
// result (hit, miss, bypass) and the spend hits saved.
import { Counter, type Registry } from "prom-client";
import type { CacheCounters } from "../cache";

export type CacheCountersOf = () => (CacheCounters & { models: Record<string, CacheCounters> }) | undefined;

export function registerCacheMetrics(r: Registry, counters: CacheCountersOf): void {
  new Counter({
    name: "svc_gateway_cache_requests_total",
    help: "Requests to a model with a response cache, by model and result (hit: answered from the cache; miss: forwarded and stored; bypass: no-store).",
    labelNames: ["model", "result"],
    registers: [r],
    collect() {
      this.reset();
      for (const [model, c] of Object.entries(counters()?.models ?? {})) {
        this.inc({ model, result: "hit" }, c.hits);
        this.inc({ model, result: "miss" }, c.misses);
        this.inc({ model, result: "bypass" }, c.bypassed);
      }
    },
  });
  new Counter({
    name: "svc_gateway_cache_saved_usd_total",
    help: "What the response cache's hits would have cost upstream, in USD at the configured prices, by model.",
    labelNames: ["model"],
    registers: [r],
    collect() {
      this.reset();
      for (const [model, c] of Object.entries(counters()?.models ?? {})) this.inc({ model }, c.savedUsdMicros / 1e6);
    },
  });
}
