// Redis loses its data before the lease holder copied the latest usage to PostgreSQL
// (SVC_USAGE_COPY_MS holds the copy back for the whole test): the rebuilt counters still hold
// every settled request, whichever replica settled it (spend, tokens, requests of each key and of
// its team and organization), so a key at its total budget or max_requests stays refused. The
// same after a restart from an older snapshot; requests in flight keep their reservations.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { Redis } from "ioredis";
import { missingServices } from "../helpers/services";
import { eventually } from "../helpers/http";
import { startCluster, clusterKey, type Shared, type Replica } from "./cluster";
import type { StandIn } from "../gateway/fixtures";
import { clusterOf } from "../../engines/cluster";

const missing = missingServices();
if (missing) console.warn(`test/scale skipped: ${missing}`);
const msg = [{ role: "user" as const, content: "hi" }];

describe.skipIf(!!missing)("FLUSHALL of Redis before the counters were copied to PostgreSQL (3 replicas)", () => {
  let shared: Shared;
  let up: StandIn;
  let rs: Replica[] = [];
  let stop: (() => Promise<void>) | undefined;
  const before = process.env.SVC_USAGE_COPY_MS;

  beforeAll(async () => {
    process.env.SVC_USAGE_COPY_MS = String(3_600_000);
    ({ shared, up, rs, stop } = await startCluster(3));
  }, 120_000);
  afterAll(async () => {
    await stop?.();
    if (before === undefined) delete process.env.SVC_USAGE_COPY_MS;
    else process.env.SVC_USAGE_COPY_MS = before;
  });

  it("rebuilds spend, tokens and requests settled on every replica, and keeps used-up keys refused", async () => {
    const org = { key_type: "team", organization_id: "gap-org", team_id: "gap-team" };
    const budget = await clusterKey(rs, { name: "gap-budget", ...org, budget_limits: { total: 50 } });
    const quota = await clusterKey(rs, { name: "gap-quota", ...org, permissions: { models: ["dollar"], max_requests: 5 } });
    const call = (k: { secret: string }, i: number) => rs[i % 3].client(k.secret).chat.completions.create({ model: "dollar", messages: msg, max_tokens: 5 });
    const refusal = (k: { secret: string }, i: number) => call(k, i).then(() => "ok", (e) => `${e.status} ${e.code}`);

    // "dollar" spends $7 a request (2 + 5 tokens): the 8th request takes the $50 budget to $56
    let served = 0;
    for (let i = 0; served < 20; i++) {
      const r = await refusal(budget, i);
      if (r !== "ok") {
        expect(r).toBe("402 budget_exceeded");
        break;
      }
      served++;
    }
    expect(served).toBe(8);
    for (let i = 0; i < 5; i++) await call(quota, i);
    expect(await refusal(quota, 5)).toBe("402 quota_exceeded");

    const redis = new Redis(shared.redis.url);
    try {
      const read = async () => {
        const out: Record<string, Record<string, string>> = {};
        for (const e of [budget.id, quota.id, "team:gap-org/gap-team", "org:gap-org"]) {
          for (const per of ["total", `day:${new Date().toISOString().slice(0, 10)}`, `month:${new Date().toISOString().slice(0, 7)}`]) {
            const h = await redis.hgetall(`svc:u:${e}:${per}`);
            out[`${e} ${per}`] = { s: h.s ?? "0", t: h.t ?? "0", r: h.r ?? "0" };
          }
        }
        return out;
      };
      // the settles are sent after each answer: wait until they are all in
      await eventually(async () => (await redis.hget(`svc:u:${budget.id}:total`, "s")) === String(8 * 7e6) && (await redis.hget(`svc:u:${quota.id}:total`, "t")) === String(5 * 7), 10_000);
      const settled = await read();
      expect(settled[`${budget.id} total`]).toEqual({ s: String(56e6), t: "56", r: "8" });
      expect(settled[`${quota.id} total`]).toEqual({ s: String(35e6), t: "35", r: "5" });
      expect(settled["team:gap-org/gap-team total"]).toEqual({ s: String(91e6), t: "91", r: "13" });
      expect(settled["org:gap-org total"]).toEqual({ s: String(91e6), t: "91", r: "13" });

      // nothing of it is in PostgreSQL yet: the rebuild cannot come from the saved counters alone
      const p = rs[0].svc.svc.db.prisma;
      expect(await p.usageCounter.count({ where: { keyId: { in: [budget.id, quota.id] } } })).toBe(0);

      await redis.flushall();
      // the first request after the loss rebuilds the counters, and is refused by them
      expect(await refusal(budget, 1)).toBe("402 budget_exceeded");
      expect(await refusal(quota, 2)).toBe("402 quota_exceeded");
      expect(await read()).toEqual(settled);
      // and on every replica
      for (let i = 0; i < 3; i++) {
        expect(await refusal(budget, i)).toBe("402 budget_exceeded");
        expect(await refusal(quota, i)).toBe("402 quota_exceeded");
      }
      expect(await read()).toEqual(settled);
    } finally {
      await redis.quit();
    }
  });

  it("requests of a key without limits leave nothing for a replica to keep", async () => {
    const k = await clusterKey(rs, { name: "gap-free" });
    const limits = rs.map((r) => clusterOf.get(r.svc.svc)!.limits!);
    const kept = limits.map((l) => l.uncopied);
    for (let i = 0; i < 6; i++) await rs[i % 3].client(k.secret).chat.completions.create({ model: "dollar", messages: msg, max_tokens: 5 });
    expect(limits.map((l) => l.uncopied)).toEqual(kept);
  });

  it("a Redis restarted from an older snapshot is rebuilt: spend settled after the snapshot stays counted", async () => {
    const k = await clusterKey(rs, { name: "gap-snapshot", budget_limits: { total: 50 } });
    const refusal = (i: number) => rs[i % 3].client(k.secret).chat.completions.create({ model: "dollar", messages: msg, max_tokens: 5 }).then(() => "ok", (e) => `${e.status} ${e.code}`);
    const redis = new Redis(shared.redis.url);
    try {
      const spent = () => redis.hget(`svc:u:${k.id}:total`, "s");
      for (let i = 0; i < 3; i++) expect(await refusal(i)).toBe("ok");
      await eventually(async () => (await spent()) === String(21e6));
      await redis.save(); // the snapshot a restart loads: $21 spent
      for (let i = 3; i < 8; i++) expect(await refusal(i)).toBe("ok");
      expect(await refusal(8)).toBe("402 budget_exceeded");
      await eventually(async () => (await spent()) === String(56e6));

      await shared.redis.restart();
      await eventually(async () => (await redis.ping().catch(() => "")) === "PONG");
      // each replica answers 503 until it has reconnected (within a second)
      for (let i = 0; i < 3; i++) {
        let r = "";
        await eventually(async () => !(r = await refusal(i)).startsWith("503 "), 10_000, 100);
        expect(r).toBe("402 budget_exceeded");
      }
      expect(await redis.hgetall(`svc:u:${k.id}:total`)).toEqual({ s: String(56e6), t: "56", r: "8" });
    } finally {
      await redis.quit();
    }
  });

  it("requests in flight when Redis loses its data keep their reservations", async () => {
    // "dollar" reserves $13 or so: against $30, three requests fit in flight and the fourth does not
    const k = await clusterKey(rs, { name: "gap-flight", budget_limits: { total: 30 } });
    const call = (i: number) => rs[i % 3].client(k.secret).chat.completions.create({ model: "dollar", messages: msg, max_tokens: 5 });
    const refusal = (i: number) => call(i).then(() => "ok", (e) => `${e.status} ${e.code}`);
    up.setMode("hang");
    const flying = [0, 1, 2].map((i) => call(i).catch(() => undefined)); // they end when the stand-in closes
    await eventually(async () => up.hanging === 3);
    expect(await refusal(0)).toBe("402 budget_exceeded");

    const redis = new Redis(shared.redis.url);
    try {
      const reserved = await redis.hgetall(`svc:r:${k.id}`);
      expect(Number(reserved.s)).toBeGreaterThan(30e6);
      await redis.flushall();
      for (let i = 0; i < 3; i++) expect(await refusal(i)).toBe("402 budget_exceeded");
      expect(await redis.hgetall(`svc:r:${k.id}`)).toEqual(reserved);
      expect(up.hanging).toBe(3);
    } finally {
      await redis.quit();
    }
    void flying;
  });
});
