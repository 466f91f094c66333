// Redis is a cache of the usage counters, PostgreSQL their truth: after Redis loses its data
// (FLUSHALL) under load, a key whose total budget was used up is not served again, and its spend
// never exceeds the budget by more than one reservation.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { Redis } from "ioredis";
import { missingServices } from "../helpers/services";
import { startCluster, clusterKey, tally, type Shared, type Replica } from "./cluster";

const missing = missingServices();
if (missing) console.warn(`test/scale skipped: ${missing}`);
const msg = [{ role: "user" as const, content: "hi" }];

describe.skipIf(!!missing)("FLUSHALL of Redis under load (3 replicas)", () => {
  let shared: Shared;
  let rs: Replica[] = [];
  let stop: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    ({ shared, rs, stop } = await startCluster(3));
  }, 120_000);
  afterAll(async () => {
    await stop?.();
  });

  it("a used-up total budget stays used up; spend stays within one reservation of it", async () => {
    const budget = 50;
    const reservation = 13; // "dollar" with max_tokens 5 reserves $13 and spends $7
    const k = await clusterKey(rs, { name: "flush", budget_limits: { total: budget } });
    const clients = rs.map((r) => r.client(k.secret));
    const wave = () => Promise.allSettled(Array.from({ length: 30 }, (_, i) => clients[i % 3].chat.completions.create({ model: "dollar", messages: msg, max_tokens: 5 })));
    let served = 0;
    for (let i = 0; i < 10; i++) {
      const t = tally(await wave());
      served += t.ok ?? 0;
      if (!t.ok) break;
    }
    expect(served * 7).toBeGreaterThanOrEqual(budget);
    // the lease holder copies the counters to PostgreSQL each second: wait for the used-up total there
    const p = rs[0].svc.svc.db.prisma;
    for (let i = 0; i < 100; i++) {
      const c = await p.usageCounter.findUnique({ where: { keyId_period: { keyId: k.id, period: "total" } } });
      if (Number(c?.spendMicros ?? 0) === served * 7e6) break;
      await new Promise((r) => setTimeout(r, 50));
    }

    const redis = new Redis(shared.redis.url);
    try {
      // load keeps coming while Redis loses everything
      const during = wave();
      await redis.flushall();
      const after = [await during, await wave(), await wave()].flat();
      const t = tally(after);
      for (const x of Object.keys(t)) expect(["402 budget_exceeded", "ok"]).toContain(x);
      served += t.ok ?? 0;
      // settles are sent after each answer: wait until they are in
      let spent = 0;
      for (let i = 0; i < 100; i++) {
        spent = Number(await redis.hget(`svc:u:${k.id}:total`, "s")) / 1e6;
        if (spent === served * 7) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(spent).toBe(served * 7);
      // tokens and requests are rebuilt too: 7 tokens a request, refusals not counted
      expect(await redis.hmget(`svc:u:${k.id}:total`, "t", "r")).toEqual([String(served * 7), String(served)]);
      expect(spent).toBeLessThan(budget + reservation);
      expect(t["402 budget_exceeded"]).toBeGreaterThan(0);
    } finally {
      await redis.quit();
    }
  });
});
