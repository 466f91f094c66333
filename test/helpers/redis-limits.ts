// Replicas' shared limits on one throwaway Redis, for tests that drive RedisLimits
// (engines/cluster/shared-limits.ts) directly: each `limits()` stands for a replica, `peek` reads
// what Redis holds. Registers its own beforeAll/afterAll in the calling describe block.
import { beforeAll, afterAll } from "vitest";
import { Redis } from "ioredis";
import { startRedis, type RedisService } from "./services";
import { RedisLimits } from "../../engines/cluster/shared-limits";
import { connectRedis, waitReady } from "../../engines/cluster/redis";

export function redisLimitsBed() {
  let redis: RedisService | undefined;
  let peek: Redis | undefined;
  const conns: Redis[] = [];
  beforeAll(async () => {
    redis = await startRedis();
    peek = new Redis(redis.url);
  }, 60_000);
  afterAll(async () => {
    for (const c of conns) c.disconnect();
    peek?.disconnect();
    await redis?.stop();
  });
  return {
    /** a connection of the tests' own, to read what Redis holds */
    get peek(): Redis {
      return peek!;
    },
    /** a replica's shared limits, its reservations lapsing after `ttl` ms, on a ready connection */
    async limits(ttl = 60_000): Promise<{ c: Redis; l: RedisLimits }> {
      const c = connectRedis(redis!.url, { name: "t" });
      conns.push(c);
      await waitReady(c);
      return { c, l: new RedisLimits(c, { prefix: "svc:", reservationTtlMs: ttl, log: () => undefined, saved: async () => ({ rows: [] }), rebuildHoldMs: 0 }) };
    },
  };
}
