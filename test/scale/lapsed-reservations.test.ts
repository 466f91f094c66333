// A replica that dies mid-request leaves its reservation in Redis (engines/cluster/limits.lua): it
// lapses after the reservation ttl and is reclaimed when a check would refuse, and a late settle
// of it releases nothing twice. Two RedisLimits on one Redis stand for two replicas.
import { describe, it, expect } from "vitest";
import type { Redis } from "ioredis";
import { missingServices } from "../helpers/services";
import { eventually } from "../helpers/http";
import { redisLimitsBed } from "../helpers/redis-limits";
import type { SharedRequest } from "../../engines/gateway/limits/types";

const missing = missingServices();

const reservedOf = (r: Redis, e: string) => r.hgetall(`svc:r:${e}`);
const usageOf = (r: Redis, e: string, per: string) => r.hgetall(`svc:u:${e}:${per}`);

describe.skipIf(!!missing)("lapsed reservations in the shared limits", () => {
  const bed = redisLimitsBed();
  const req = (k: string, day: string, s: number, bt?: number): SharedRequest => ({
    // the organization has a budget (a check reads it, so it holds reservations); the team has none
    k, lim: true, ents: [k, "team:t", "org:o"], day, month: `month:${day.slice(4, 11)}`, s, t: s > 0 ? 3 : 0, checks: bt ? [{ e: k, whose: "", bt }, { e: "org:o", whose: "", bt: 1e12 }] : [],
  });

  it("a dead replica's reservation lapses and is reclaimed; its late settle releases nothing twice", async () => {
    const [a, b] = await Promise.all([bed.limits(300), bed.limits(60_000)]);
    const peek = bed.peek;
    const day = "day:2026-11-28";
    expect((await a.l.admit(req("k1", day, 60e6, 50e6), "a-1"))[0]).toBe("ok");
    // the reservation counts: the budget is committed
    expect(await b.l.admit(req("k1", day, 60e6, 50e6), "b-1")).toEqual(["usage", 1, "bt", "0"]);
    // a's request never settles (its replica "died"): after its lapse the other replica is served
    await eventually(async () => (await b.l.admit(req("k1", day, 60e6, 50e6), "b-2"))[0] === "ok", 5_000, 50);
    expect(await reservedOf(peek, "k1")).toEqual({ s: String(60e6), t: "3" });
    expect(await reservedOf(peek, "org:o")).toEqual({ s: String(60e6), t: "3" });
    // the settle of the lapsed one arrives after all: it adds its spend, and releases nothing
    a.l.settle(req("k1", day, 60e6, 50e6), "a-1", 1e6, 2, true);
    await eventually(async () => (await usageOf(peek, "k1", "total")).s === String(1e6), 5_000, 20);
    expect(await reservedOf(peek, "k1")).toEqual({ s: String(60e6), t: "3" });
    b.l.settle(req("k1", day, 60e6, 50e6), "b-2", 2e6, 2, true);
    await eventually(async () => (await reservedOf(peek, "k1")).s === "0", 5_000, 20);
    expect(await usageOf(peek, "k1", "total")).toEqual({ s: String(3e6), t: "4", r: "2" });
    expect(await reservedOf(peek, "org:o")).toEqual({ s: "0", t: "0" });
    expect(await peek.zcard("svc:rs:k1")).toBe(0);
    // no check reads the team's counters: it holds no reservation, but counts the requests
    expect(await reservedOf(peek, "team:t")).toEqual({});
    expect(await peek.exists("svc:rs:team:t")).toBe(0);
    expect((await usageOf(peek, "team:t", "total")).r).toBe("2");
  });
});
