// Reads of the shared counters as Redis keeps them (engines/cluster/limits.lua: one hash per
// entity, `c:<entity>`), in the shape the tests compare: the fields present, as Redis stores them.
import type { Redis } from "ioredis";

/** settled spend, tokens and requests of an entity in one period (total, day:…, month:…) */
export async function usageOf(redis: Redis, e: string, period: string): Promise<Record<string, string>> {
  const [s, t, r] = await redis.hmget(`svc:c:${e}`, `s|${period}`, `t|${period}`, `r|${period}`);
  return { ...(s !== null ? { s } : {}), ...(t !== null ? { t } : {}), ...(r !== null ? { r } : {}) };
}

/** spend and tokens reserved by an entity's requests in flight */
export async function reservedOf(redis: Redis, e: string): Promise<Record<string, string>> {
  const [s, t] = await redis.hmget(`svc:c:${e}`, "rs", "rt");
  return { ...(s !== null ? { s } : {}), ...(t !== null ? { t } : {}) };
}
