import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Alerts } from "../../engines/gateway/alerts/alerts";
import { WebhookOutbox } from "../../engines/gateway/outbox/webhooks";
import type { KeyRef } from "../../engines/gateway/key-types";
import type { AlertSettingsSpec } from "../../schemas/kinds/alert-settings";
import { clock, receiver, tempDb } from "./helpers";

type Db = Awaited<ReturnType<typeof tempDb>>;
const settings: AlertSettingsSpec = { budget_threshold: [50, 80, 100], rate_limit_percentage: 90, failed_auth_threshold: 5, unusual_patterns: true };
const M = 1_000_000n; // micro-units per USD

describe("Alerts", () => {
  let db: Db;
  let rx: Awaited<ReturnType<typeof receiver>>;
  let outbox: WebhookOutbox;
  let key: KeyRef;
  const c = clock();
  const events = () => rx.got.map((r) => JSON.parse(r.body) as { type: string; data: Record<string, any> });
  const make = (over: Partial<ConstructorParameters<typeof Alerts>[0]> = {}) =>
    new Alerts({ outbox, prisma: db.prisma, settings: () => settings, now: c.now, log: () => {}, ...over });
  async function drain(a: Alerts) {
    await a.idle();
    await outbox.deliverDue();
  }

  beforeEach(async () => {
    db = await tempDb();
    rx = await receiver();
    c.set("2026-11-22T10:00:00.000Z");
    outbox = new WebhookOutbox(db.prisma, { resolveSecret: () => "s", log: () => {}, now: c.now });
    key = {
      id: "key_a",
      name: "Key A",
      webhook: { enabled: true, url: rx.url, events: ["key.budget_threshold", "key.limit_exceeded", "key.suspicious_activity"], secret: "env:X" },
    };
  });
  afterEach(async () => {
    await outbox.close();
    await rx.close();
    await db.cleanup();
  });

  it("rate_limit_percentage warns once a minute when a key's rate window is that full", async () => {
    const a = make();
    a.rateUsage(key, 10, 2); // 80% used: under the 90% setting
    await drain(a);
    expect(events()).toHaveLength(0);
    a.rateUsage(key, 10, 1); // 90%
    a.rateUsage(key, 10, 0); // still within the minute: no second event
    await drain(a);
    expect(events().map((e) => [e.type, e.data.kind, e.data.used_percentage, e.data.threshold_percentage])).toEqual([
      ["key.limit_exceeded", "rate_limit_warning", 90, 90],
    ]);
    c.advance(61_000);
    a.rateUsage(key, 10, 0);
    await drain(a);
    expect(events()).toHaveLength(2);
  });

  it("budget thresholds fire once per threshold per period, and not again after a restart", async () => {
    const a = make();
    const spend = (usd: number) => ({ dailyMicros: BigInt(usd) * M, monthlyMicros: BigInt(usd) * M, totalMicros: BigInt(usd) * M });
    a.spendChanged(key, spend(4), { daily: 10 }, [50, 80]);
    await drain(a);
    expect(events()).toHaveLength(0);

    a.spendChanged(key, spend(5), { daily: 10 }, [50, 80]);
    a.spendChanged(key, spend(6), { daily: 10 }, [50, 80]); // still 50%+: no second event
    await drain(a);
    expect(events().map((e) => [e.type, e.data.period, e.data.threshold])).toEqual([["key.budget_threshold", "daily", 50]]);
    expect(events()[0].data).toMatchObject({ period_id: "2026-11-22", budget_usd: 10, spend_usd: 5, percent_used: 50 });

    // "Restart": a new Alerts on the same database does not fire 50 again, but fires 80 once.
    const b = make();
    b.spendChanged(key, spend(7), { daily: 10 }, [50, 80]);
    await drain(b);
    expect(events()).toHaveLength(1);
    b.spendChanged(key, spend(9), { daily: 10 }, [50, 80]);
    b.spendChanged(key, spend(9), { daily: 10 }, [50, 80]);
    await drain(b);
    expect(events().map((e) => e.data.threshold)).toEqual([50, 80]);

    // A new UTC day is a new period: 50 fires again.
    c.set("2026-11-23T00:00:01.000Z");
    b.spendChanged(key, spend(5), { daily: 10 }, [50, 80]);
    await drain(b);
    expect(events().map((e) => [e.data.period_id, e.data.threshold])).toEqual([
      ["2026-11-22", 50],
      ["2026-11-22", 80],
      ["2026-11-23", 50],
    ]);
    expect(await db.prisma.alertMark.count()).toBe(3);
  });

  it("monthly and total budgets are separate periods; empty thresholds fall back to settings", async () => {
    const a = make();
    a.spendChanged(key, { dailyMicros: 1n * M, monthlyMicros: 40n * M, totalMicros: 100n * M }, { daily: 10, monthly: 50, total: 100 }, []);
    await drain(a);
    expect(events().map((e) => `${e.data.period}:${e.data.threshold}`).sort()).toEqual(["monthly:50", "monthly:80", "total:100", "total:50", "total:80"]);
    expect(events().find((e) => e.data.period === "monthly")!.data.period_id).toBe("2026-11");
  });

  it("limit_exceeded is rate-limited to one per key and limit per minute", async () => {
    const a = make();
    for (let i = 0; i < 5; i++) a.limitExceeded(key, "per_minute", { limit_value: 10 });
    a.limitExceeded(key, "budget.daily", {});
    c.advance(30_000);
    a.limitExceeded(key, "per_minute", {});
    c.advance(31_000);
    a.limitExceeded(key, "per_minute", {});
    await drain(a);
    expect(events().map((e) => e.data.limit)).toEqual(expect.arrayContaining(["per_minute", "budget.daily", "per_minute"]));
    expect(events()).toHaveLength(3);
    expect(events().every((e) => e.type === "key.limit_exceeded")).toBe(true);
  });

  it("a shared throttle (replicas): only the first claim sends; a claim that cannot be checked sends anyway", async () => {
    const claimed = new Map<string, number>(); // what another replica's Redis would hold
    const claim = async (id: string, ttl: number) => {
      const at = claimed.get(id);
      if (at !== undefined && c.now().getTime() - at < ttl) return false;
      claimed.set(id, c.now().getTime());
      return true;
    };
    const [a, b] = [make(), make()];
    const countFailure = () => Promise.reject(new Error("not in this test"));
    a.share({ claim, countFailure });
    b.share({ claim, countFailure });
    a.limitExceeded(key, "per_minute", { from: "a" });
    await a.idle();
    b.limitExceeded(key, "per_minute", { from: "b" }); // the other replica, same minute
    c.advance(61_000);
    await drain(b);
    b.limitExceeded(key, "per_minute", { from: "b" }); // the next minute
    await drain(b);
    expect(events().map((e) => e.data.from)).toEqual(["a", "b"]);
    expect(claimed.get(`limit:${key.id}:per_minute`)).toBeDefined();

    const logs: string[] = [];
    const down = make({ log: (m) => logs.push(m) });
    const unreachable = () => Promise.reject(new Error("Redis unreachable"));
    down.share({ claim: unreachable, countFailure: unreachable });
    down.limitExceeded(key, "budget.daily", { from: "down" });
    await drain(down);
    expect(events().map((e) => e.data.from)).toEqual(["a", "b", "down"]);
    expect(logs.join("\n")).toContain("Redis unreachable");
  });

  it("shared failure counts (replicas) add up; when they cannot be reached, each counts alone", async () => {
    const counts = new Map<string, number>(); // what Redis would hold (failures.lua)
    const countFailure = async (subject: string, _ms: number, threshold: number) => {
      const n = (counts.get(subject) ?? 0) + 1;
      counts.set(subject, n >= threshold ? 0 : n);
      return n;
    };
    const claim = async () => true;
    const [a, b] = [make(), make()];
    a.share({ claim, countFailure });
    b.share({ claim, countFailure });
    for (const x of [a, b, a, b]) x.failedAuth("sk-svc-AbCd…", "203.0.113.9", key);
    await drain(a);
    await drain(b);
    expect(events()).toHaveLength(0);
    b.failedAuth("sk-svc-AbCd…", "203.0.113.9", key); // the 5th, on either replica
    await drain(b);
    expect(events().map((e) => e.data.failures)).toEqual([5]);
    expect([...counts.values()]).toEqual([0, 0]); // both counts start afresh

    const logs: string[] = [];
    const alone = make({ log: (m) => logs.push(m) });
    alone.share({ claim, countFailure: () => Promise.reject(new Error("Redis unreachable")) });
    const other = { ...key, id: "key_b" };
    for (let i = 0; i < 5; i++) alone.failedAuth("sk-svc-EfGh…", "203.0.113.10", other);
    await drain(alone);
    expect(events().map((e) => e.data.key_id)).toEqual(["key_a", "key_b"]);
    expect(logs.join("\n")).toContain("counting here");
  });

  it("failed-auth threshold from one IP triggers suspicious_activity for the known key", async () => {
    const a = make({ keyForToken: (p) => (p === "sk-svc-AbCd…" ? key : undefined) });
    for (let i = 0; i < 4; i++) a.failedAuth("sk-svc-AbCd…", "203.0.113.9");
    await drain(a);
    expect(events()).toHaveLength(0);
    a.failedAuth("sk-svc-AbCd…", "203.0.113.9");
    await drain(a);
    expect(events()).toHaveLength(1);
    expect(events()[0]).toMatchObject({ type: "key.suspicious_activity", data: { key_id: "key_a", reason: "failed_auth", ip_address: "203.0.113.9", failures: 5 } });
    // once per hour per key
    for (let i = 0; i < 10; i++) a.failedAuth("sk-svc-AbCd…", "203.0.113.9");
    await drain(a);
    expect(events()).toHaveLength(1);
  });

  it("failures spread beyond 5 minutes do not trigger; unknown keys only log", async () => {
    const logs: string[] = [];
    const a = make({ log: (m) => logs.push(m) });
    for (let i = 0; i < 8; i++) {
      a.failedAuth("sk-svc-zzzz…", "198.51.100.1", key);
      c.advance(90_000); // 4 per 6 minutes: never 5 within 5 minutes
    }
    await drain(a);
    expect(events()).toHaveLength(0);
    for (let i = 0; i < 5; i++) a.failedAuth("sk-svc-nope…", "198.51.100.2");
    await drain(a);
    expect(events()).toHaveLength(0);
    expect(logs.some((m) => m.includes("5 failed authentications") && m.includes("no known key"))).toBe(true);
  });

  it("unusual patterns: a new IP after 20+ requests from a fixed set, and a rate spike", async () => {
    const a = make();
    for (let i = 0; i < 25; i++) {
      a.requestSeen(key, i % 2 ? "10.0.0.1" : "10.0.0.2");
      c.advance(1000);
    }
    await drain(a);
    expect(events()).toHaveLength(0);
    a.requestSeen(key, "192.0.2.77");
    await drain(a);
    expect(events()).toHaveLength(1);
    expect(events()[0].data).toMatchObject({ reason: "new_ip", ip_address: "192.0.2.77" });

    // Rate spike on another key: 2 requests a minute for 15 minutes, then 60 in one minute.
    const k2: KeyRef = { ...key, id: "key_b" };
    for (let m = 0; m < 15; m++) {
      a.requestSeen(k2, "10.0.0.9");
      a.requestSeen(k2, "10.0.0.9");
      c.advance(60_000);
    }
    for (let i = 0; i < 60; i++) a.requestSeen(k2, "10.0.0.9");
    await drain(a);
    const spikes = events().filter((e) => e.data.key_id === "key_b");
    expect(spikes).toHaveLength(1); // once per hour, although the spike continued
    expect(spikes[0].data.reason).toBe("rate_spike");
  });

  it("unusual_patterns: false turns pattern detection off", async () => {
    const a = make({ settings: () => ({ ...settings, unusual_patterns: false }) });
    for (let i = 0; i < 30; i++) a.requestSeen(key, "10.0.0.1");
    a.requestSeen(key, "192.0.2.1");
    await drain(a);
    expect(events()).toHaveLength(0);
  });
});
