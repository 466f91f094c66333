// A limits.lua call whose answer never came back (Redis stalled past the command timeout, or the
// connection dropped after the script ran) may still have run: its settles are sent again, and must
// not be counted twice (engines/cluster/shared-limits.ts, limits.lua). CLIENT PAUSE WRITE holds the
// script in Redis past the 2 s timeout, then lets it run, as a stalled Redis would.
import { describe, it, expect } from "vitest";
import { missingServices } from "../helpers/services";
import { eventually } from "../helpers/http";
import { redisLimitsBed } from "../helpers/redis-limits";
import type { SharedRequest } from "../../engines/gateway/limits/types";

const missing = missingServices();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!!missing)("a settle whose call timed out but ran in Redis", () => {
  const bed = redisLimitsBed();
  const day = "day:2026-11-28";
  const req = (k: string): SharedRequest => ({ k, lim: true, ents: [k, "org:o"], day, month: "month:2026-11", s: 5e6, t: 7, checks: [{ e: k, whose: "", bt: 100e6 }] });

  it("is counted once, and its reservation released once", async () => {
    const { l } = await bed.limits();
    const peek = bed.peek;
    expect((await l.admit(req("k-stall"), "x-1"))[0]).toBe("ok");
    expect((await l.admit(req("k-stall"), "x-2"))[0]).toBe("ok");
    // Redis stalls for 3.5 s: the settle's call times out (2 s) and is queued in Redis meanwhile
    await peek.call("CLIENT", "PAUSE", "3500", "WRITE");
    l.settle(req("k-stall"), "x-1", 1e6, 3, true);
    await sleep(4_500);
    // everything sent meanwhile has run; the retry too
    await eventually(async () => l.unsettled === 0, 10_000, 50);
    await sleep(1_000);
    expect(await peek.hgetall("svc:u:k-stall:total")).toEqual({ s: String(1e6), t: "3", r: "2" });
    expect(await peek.hgetall("svc:u:org:o:total")).toEqual({ s: String(1e6), t: "3", r: "2" });
    // x-2 is still in flight: its reservation alone is held
    expect(await peek.hgetall("svc:r:k-stall")).toEqual({ s: String(5e6), t: "7" });
  }, 30_000);

  it("is counted when the call that carried it never ran (its connection was killed before Redis ran it)", async () => {
    const { l } = await bed.limits();
    const peek = bed.peek;
    expect((await l.admit(req("k-lost"), "y-1"))[0]).toBe("ok");
    await peek.call("CLIENT", "PAUSE", "10000", "WRITE");
    try {
      l.settle(req("k-lost"), "y-1", 1e6, 3, true);
      // the settle's call waits in Redis; its connection dies before Redis runs it
      const ours = async () => String(await peek.call("CLIENT", "LIST")).split("\n").filter((x) => / name=svc-t /.test(x) && / cmd=evalsha /.test(x));
      await eventually(async () => (await ours()).length === 1, 5_000, 20);
      const id = /id=(\d+)/.exec((await ours())[0])![1];
      await peek.call("CLIENT", "KILL", "ID", id);
    } finally {
      await peek.call("CLIENT", "UNPAUSE");
    }
    await eventually(async () => l.unsettled === 0, 10_000, 50);
    expect(await peek.hgetall("svc:u:k-lost:total")).toEqual({ s: String(1e6), t: "3", r: "1" });
    expect(await peek.hgetall("svc:r:k-lost")).toEqual({ s: "0", t: "0" });
  }, 30_000);
});
