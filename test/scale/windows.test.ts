// per_hour / per_day windows in the shared limits (engines/cluster/limits.lua): up to 10,000 an exact
// log of admissions, above it 120 slices of the window as in embedded mode, so a busy key's window
// holds a bounded number of fields in Redis instead of every admission of the last hour or day.
// Two RedisLimits on one Redis stand for two replicas; a turn's admissions go in one script call.
import { describe, it, expect } from "vitest";
import { missingServices } from "../helpers/services";
import { redisLimitsBed } from "../helpers/redis-limits";
import type { RedisLimits } from "../../engines/cluster/shared-limits";
import type { SharedRequest, SharedVerdict } from "../../engines/gateway/limits/types";

const missing = missingServices();
const day = "day:2026-11-29";

describe.skipIf(!!missing)("rate windows in the shared limits", () => {
  const bed = redisLimitsBed();
  const limits = async () => (await bed.limits()).l;
  const req = (k: string, limit: { ph?: number; pd?: number }): SharedRequest => ({ k, lim: true, ...limit, ents: [k, "org:o"], day, month: "month:2026-11", s: 0, t: 0, checks: [] });
  /** Redis's time now, an hour window's slice width and the newest slice start outside it */
  async function hourCut(): Promise<{ width: number; now: number; cut: number }> {
    const width = 30_000;
    const [sec, usec] = await bed.peek.time();
    const now = Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
    return { width, now, cut: Math.floor((now - 3_600_000) / width) * width };
  }
  let n = 0;
  /** `count` admissions spread over the replicas, `wave` at once (one script call each turn) */
  async function admitMany(ls: RedisLimits[], r: SharedRequest, count: number, wave = 500): Promise<SharedVerdict[]> {
    const out: SharedVerdict[] = [];
    for (let i = 0; i < count; i += wave) {
      const part = Array.from({ length: Math.min(wave, count - i) }, (_, j) => ls[j % ls.length].admit(r, `w-${++n}`));
      out.push(...(await Promise.all(part)));
    }
    return out;
  }

  it("per_hour above 10,000: exactly the limit passes across two replicas, and Redis keeps slices, not every admission", async () => {
    const ls = [await limits(), await limits()];
    const r = req("k-big", { ph: 10_050 });
    const v = await admitMany(ls, r, 10_200);
    expect(v.filter((x) => x[0] === "ok")).toHaveLength(10_050);
    const refused = v.filter((x) => x[0] !== "ok");
    expect(refused).toHaveLength(150);
    expect(refused[0].slice(0, 2)).toEqual(["rate", "per_hour"]);
    // retry after: the oldest slice leaves the window, within the hour
    expect(Number(refused[0][2])).toBeGreaterThan(0);
    expect(Number(refused[0][2])).toBeLessThanOrEqual(3_600_000);
    // the headers' window: nothing left
    expect(refused[0][3]).toEqual([10_050, 0, 3_600_000]);
    expect(await bed.peek.exists("svc:rh:k-big")).toBe(0);
    const { n, c, ...slices } = await bed.peek.hgetall("svc:rh:k-big#");
    expect(Object.keys(slices).length).toBeLessThanOrEqual(2);
    expect(Object.values(slices).reduce((a, x) => a + Number(x), 0)).toBe(10_050);
    expect(Number(n)).toBe(10_050);
    expect(Number(c)).toBeLessThan(Math.min(...Object.keys(slices).map(Number)));
    expect(await bed.peek.pttl("svc:rh:k-big#")).toBeGreaterThan(3_500_000);
  });

  it("per_hour up to 10,000 stays an exact log; a limit raised past 10,000 still counts what the log holds", async () => {
    const [l] = [await limits()];
    const small = req("k-change", { ph: 10 });
    const v = await admitMany([l], small, 12, 4);
    expect(v.filter((x) => x[0] === "ok")).toHaveLength(10);
    expect(await bed.peek.zcard("svc:rh:k-change")).toBe(10);
    // the key's limit is raised: the 10 admissions still count against the new one
    const big = req("k-change", { ph: 20_000 });
    const [ok] = await admitMany([l], big, 1);
    expect(ok).toEqual(["ok", [20_000, 20_000 - 11, 3_600_000]]);
    expect(await bed.peek.zcard("svc:rh:k-change")).toBe(10);
    expect(Number(await bed.peek.hget("svc:rh:k-change#", "n"))).toBe(1);
  });

  it("per_day above 10,000 (no per_hour): the headers describe the day window", async () => {
    const [l] = [await limits()];
    const v = await admitMany([l], req("k-day", { pd: 50_000 }), 3, 3);
    expect(v.map((x) => x[0])).toEqual(["ok", "ok", "ok"]);
    expect(v[2]).toEqual(["ok", [50_000, 50_000 - 3, 86_400_000]]);
    expect(await bed.peek.exists("svc:rd:k-day")).toBe(0);
    const { n, c: _c, ...slices } = await bed.peek.hgetall("svc:rd:k-day#");
    expect([Number(n), ...Object.values(slices).map(Number)]).toEqual([3, 3]);
  });

  it("slices that left the window stop counting: those since the last call are dropped, all of them after a long idle", async () => {
    const [l] = [await limits()];
    // every slice starting at or before `cut` is out of the hour
    const { width, cut } = await hourCut();
    // c: the last call dropped what started before; one slice since has left the window, one is in it
    await bed.peek.hset("svc:rh:k-old#", { c: cut - 10 * width, n: 500, [cut - 5 * width]: 300, [cut + 100 * width]: 200 });
    const [v] = await admitMany([l], req("k-old", { ph: 10_050 }), 1);
    expect(v).toEqual(["ok", [10_050, 10_050 - 201, 3_600_000]]);
    const { n, c, ...slices } = await bed.peek.hgetall("svc:rh:k-old#");
    expect(Number(n)).toBe(201);
    expect(Number(c)).toBeGreaterThanOrEqual(cut);
    expect(slices[cut - 5 * width]).toBeUndefined();
    expect(slices[cut + 100 * width]).toBe("200");
    // idle for longer than the window: nothing of it counts
    await bed.peek.hset("svc:rh:k-idle#", { c: cut - 200 * width, n: 2_000, [cut - 150 * width]: 2_000 });
    const [w] = await admitMany([l], req("k-idle", { ph: 10_050 }), 1);
    expect(w).toEqual(["ok", [10_050, 10_050 - 1, 3_600_000]]);
    const idle = await bed.peek.hgetall("svc:rh:k-idle#");
    expect(Number(idle.n)).toBe(1);
    expect(idle[cut - 150 * width]).toBeUndefined();
  });

  it("a full sliced window refuses until its oldest slice leaves, and says when", async () => {
    const [l] = [await limits()];
    const { width, now, cut } = await hourCut();
    // the window is full: its oldest slice starts 3 slices after the cut
    await bed.peek.hset("svc:rh:k-full#", { c: cut, n: 10_050, [cut + 3 * width]: 10_000, [cut + 50 * width]: 50 });
    const [v] = await admitMany([l], req("k-full", { ph: 10_050 }), 1);
    expect(v.slice(0, 2)).toEqual(["rate", "per_hour"]);
    // that slice leaves the window an hour after it started
    const retry = Number(v[2]);
    expect(Math.abs(retry - (cut + 3 * width + 3_600_000 - now))).toBeLessThan(1_000);
  });
});
