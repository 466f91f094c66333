// Three svc replicas on loopback sharing PostgreSQL and Redis (README "Scale-out"): limits hold
// across replicas exactly, a revoked key is refused on every replica as soon as the revoke
// returns, and a Redis outage refuses limited keys with a clear 503 until Redis is back.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { Redis } from "ioredis";
import { missingServices } from "../helpers/services";
import { expectError } from "../gateway/fixtures";
import { startCluster, clusterKey, everywhere, tally, listen, type Shared, type Replica } from "./cluster";
import { until } from "../helpers/http";
import pg from "pg";
import { LEASE_LOCK } from "../../engines/cluster/lease";
import { clusterOf } from "../../engines/cluster";

const missing = missingServices();
if (missing) console.warn(`test/scale skipped: ${missing}`);
const msg = [{ role: "user" as const, content: "hi" }];

describe.skipIf(!!missing)("3 replicas sharing PostgreSQL and Redis", () => {
  let shared: Shared;
  let rs: Replica[] = [];
  let stop: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    ({ shared, rs, stop } = await startCluster(3));
  }, 120_000);

  afterAll(async () => {
    await stop?.();
  });

  const key = (body: Record<string, unknown>, on = 0) => clusterKey(rs, { name: "scale", ...body }, on);

  it("exactly one replica holds the reconciler lease", async () => {
    expect(await leaseHolders(shared.pg.url)).toBe(1);
  });

  it("an object written on a replica without the lease becomes Ready there too (status from the reconciler)", async () => {
    const follower = rs.find((r) => !clusterOf.get(r.svc.svc)?.lease?.held)!;
    await follower.svc.svc.store.write([{ op: "upsert", kind: "AlertSettings", name: "scale", owner: "config:test", spec: {} }]);
    const gen = follower.svc.svc.store.get("AlertSettings", "scale")!.generation;
    const res = await follower.svc.svc.control!.waitForReady([{ kind: "AlertSettings", name: "scale" }], { "AlertSettings/scale": gen }, 15_000);
    expect(res).toMatchObject({ ready: true, timedOut: false });
  });

  it("100 parallel requests spread over the replicas against per_minute 10: exactly 10 pass", async () => {
    const k = await key({ rate_limits: { per_minute: 10 } });
    const clients = rs.map((r) => r.client(k.secret));
    const results = await Promise.allSettled(Array.from({ length: 100 }, (_, i) => clients[i % 3].chat.completions.create({ model: "gpt-x", messages: msg })));
    expect(tally(results)).toEqual({ ok: 10, "429 rate_limit_exceeded": 90 });
    const e: any = results.find((r) => r.status === "rejected")!;
    expect(Number(e.reason.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(e.reason.message).toContain("per_minute=10");
  });

  it("a budget is never overspent beyond one reservation across replicas", async () => {
    const budget = 50;
    const reservation = 13;
    const k = await key({ budget_limits: { total: budget } });
    const clients = rs.map((r) => r.client(k.secret));
    let served = 0;
    for (let wave = 0; wave < 10; wave++) {
      const results = await Promise.allSettled(Array.from({ length: 30 }, (_, i) => clients[i % 3].chat.completions.create({ model: "dollar", messages: msg, max_tokens: 5 })));
      const t = tally(results);
      served += t.ok ?? 0;
      for (const x of Object.keys(t)) expect(["ok", "402 budget_exceeded"]).toContain(x);
      if (!t.ok) break;
    }
    const redis = new Redis(shared.redis.url);
    // settles are sent after each answer: wait until no reservation is left
    let spent = 0;
    for (let i = 0; i < 50; i++) {
      const [s, reserved] = await Promise.all([redis.hget(`svc:u:${k.id}:total`, "s"), redis.hget(`svc:r:${k.id}`, "s")]);
      spent = Number(s) / 1e6;
      if (Number(reserved ?? 0) === 0 && spent === served * 7) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await redis.quit();
    expect(spent).toBe(served * 7);
    expect(spent).toBeGreaterThanOrEqual(budget); // used up ...
    expect(spent).toBeLessThan(budget + reservation); // ... never beyond one reservation
    // every replica reports the shared usage (copied from Redis each second), and the lease
    // holder saves it to PostgreSQL
    for (const r of rs) {
      let seen = -1;
      await until(() => {
        void r.api("GET", `/v1/api-keys/${k.id}`).then((x) => (seen = x.json?.usage?.total?.spend_usd));
        return seen === spent;
      }, 10_000, 200);
    }
    const db = new pg.Client({ connectionString: shared.pg.url });
    await db.connect();
    try {
      let saved = -1;
      for (let i = 0; i < 50 && saved !== spent; i++) {
        const row = await db.query(`SELECT spendmicros FROM usagecounter WHERE keyid = $1 AND period = 'total'`, [k.id]);
        saved = row.rows[0] ? Number(row.rows[0].spendmicros) / 1e6 : -1;
        if (saved !== spent) await new Promise((r) => setTimeout(r, 200));
      }
      expect(saved).toBe(spent);
    } finally {
      await db.end();
    }
  });

  it("a key revoked on one replica is refused on all of them as soon as the revoke returns", async () => {
    const k = await key({ rate_limits: { per_minute: 1000 } });
    const plain = await key({}); // no limits: refused too
    for (const r of rs) await r.client(k.secret).chat.completions.create({ model: "gpt-x", messages: msg });
    const sub = await listen(shared.redis.url);
    try {
      const heard = sub.next();
      expect((await rs[0].api("DELETE", `/v1/api-keys/${k.id}`)).status).toBe(200);
      for (const r of rs) await expectError(r.client(k.secret).chat.completions.create({ model: "gpt-x", messages: msg }), 401, "key_revoked");
      // the other replicas are told by pub/sub (how fast is the benchmarks' business)
      await heard;

      const heard2 = sub.next();
      expect((await rs[1].api("DELETE", `/v1/api-keys/${plain.id}`)).status).toBe(200);
      for (const r of rs) await expectError(r.client(plain.secret).chat.completions.create({ model: "gpt-x", messages: msg }), 401, "key_revoked");
      await heard2;
      // and their own key caches follow (the refusal no longer depends on Redis)
      await everywhere(rs, "ApiKey", plain.id, (s) => !!s.revoked_at);
    } finally {
      await sub.close();
    }
  });

  it("a Redis outage refuses limited keys with a clear 503 and recovers; keys without limits keep working", async () => {
    const limited = await key({ rate_limits: { per_minute: 1000 } });
    const free = await key({});
    await rs[2].client(limited.secret).chat.completions.create({ model: "gpt-x", messages: msg });
    await shared.redis.kill();
    try {
      const e = await expectError(rs[2].client(limited.secret).chat.completions.create({ model: "gpt-x", messages: msg }), 503, "internal_error");
      expect(e.message).toMatch(/Redis/);
      await rs[0].client(free.secret).chat.completions.create({ model: "gpt-x", messages: msg });
    } finally {
      await shared.redis.restart();
    }
    // reconnects by itself (retry every <= 1 s)
    let ok = false;
    for (let i = 0; i < 100 && !ok; i++) {
      ok = await rs[2].client(limited.secret).chat.completions.create({ model: "gpt-x", messages: msg }).then(() => true, () => false);
      if (!ok) await new Promise((r) => setTimeout(r, 100));
    }
    expect(ok).toBe(true);
  });
});

async function leaseHolders(url: string): Promise<number> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const r = await c.query(`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND granted`, [LEASE_LOCK]);
    return r.rows[0].n;
  } finally {
    await c.end();
  }
}
