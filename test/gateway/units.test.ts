// Unit tests with injected clocks: policy evaluation (Deny beats Allow, globs, conditions,
// time_between wrapping midnight in an IANA zone), the token bucket and sliding windows (true
// Retry-After), reshaping limits in place, UTC day rollover, IP allowlists, key secrets.
import { describe, it, expect } from "vitest";
import { EventEmitter } from "node:events";
import { compileDocument, evaluate, timeBetween, globMatch } from "../../engines/gateway/policy";
import { Limits } from "../../engines/gateway/limits";
import { KeyCache, generateSecret, hashSecret, ipAllowed, parseRange, base62, type KeyEntry } from "../../engines/gateway/keys";
import { SvcError } from "../../engines/errors";
import { errorHeaders, statusOf } from "../../api/errors";
import { costMicros } from "../../engines/providers/types";
import { mergePatch } from "../../engines/gateway/key-admin";
import { PolicyIndex } from "../../engines/gateway/policy";
import { ControllerManager } from "../../controllers/runtime";
import { apiKeyController } from "../../controllers/kinds/api-key";
import { acceptedController } from "../../controllers/kinds/accepted";
import { jsonLogger } from "../../api/log";

const at = (iso: string) => Date.parse(iso);

describe("policy", () => {
  const req = (o: Partial<Parameters<typeof evaluate>[1]> = {}) => ({ action: "chat:completions" as const, model: "gpt-4o", provider: "openai", monthSpendMicros: 0, now: at("2026-11-22T12:00:00Z"), ...o });

  it("explicit Deny beats Allow, whatever the order", () => {
    for (const order of [0, 1]) {
      const st = [
        { effect: "Allow" as const, actions: ["*" as const], resources: ["*"] },
        { effect: "Deny" as const, actions: ["chat:completions" as const], resources: ["model:gpt-4*"] },
      ];
      if (order) st.reverse();
      const s = compileDocument({ version: "2024-01-01", statements: st }, "p");
      const d = evaluate(s, req());
      expect(d.allowed).toBe(false);
      expect(evaluate(s, req({ model: "claude" })).allowed).toBe(true);
      expect(evaluate(s, req({ action: "chat:stream" })).allowed).toBe(true);
    }
  });

  it("statements exist and none allows -> deny; no statements -> allow", () => {
    const s = compileDocument({ version: "2024-01-01", statements: [{ effect: "Allow", actions: ["chat:stream"], resources: ["provider:anthropic"] }] }, "p");
    expect(evaluate(s, req()).allowed).toBe(false);
    expect(evaluate(s, req({ action: "chat:stream", provider: "anthropic" })).allowed).toBe(true);
    expect(evaluate([], req()).allowed).toBe(true);
  });

  it("globs in resource names", () => {
    expect(globMatch("gpt-*", "gpt-4o")).toBe(true);
    expect(globMatch("gpt-*", "xgpt-4o")).toBe(false);
    expect(globMatch("*-mini", "gpt-4o-mini")).toBe(true);
    expect(globMatch("a.b", "axb")).toBe(false);
  });

  it("not_in and monthly budget conditions", () => {
    const s = compileDocument(
      {
        version: "2024-01-01",
        statements: [
          { effect: "Allow", actions: ["*"], resources: ["*"], condition: { not_in: ["openai"] } },
          { effect: "Deny", actions: ["*"], resources: ["*"], condition: { monthly_budget_over: 100 } },
        ],
      },
      "p",
    );
    expect(evaluate(s, req()).allowed).toBe(false);
    expect(evaluate(s, req({ provider: "local" })).allowed).toBe(true);
    expect(evaluate(s, req({ provider: "local", monthSpendMicros: 100_000_000 })).allowed).toBe(false);
    const u = compileDocument({ version: "2024-01-01", statements: [{ effect: "Allow", actions: ["*"], resources: ["*"], condition: { monthly_budget_under: 5 } }] }, "p");
    expect(evaluate(u, req({ monthSpendMicros: 4_999_999 })).allowed).toBe(true);
    expect(evaluate(u, req({ monthSpendMicros: 5_000_000 })).allowed).toBe(false);
  });

  it("time_between in an IANA zone, wrapping midnight", () => {
    // 22:00-06:00 in Europe/Paris (UTC+1 in November)
    const tb = (iso: string) => timeBetween(at(iso), "22:00", "06:00", "Europe/Paris");
    expect(tb("2026-11-22T20:59:00Z")).toBe(false); // 21:59 Paris
    expect(tb("2026-11-22T21:00:00Z")).toBe(true); // 22:00
    expect(tb("2026-11-22T23:30:00Z")).toBe(true); // 00:30
    expect(tb("2026-11-23T04:59:00Z")).toBe(true); // 05:59
    expect(tb("2026-11-23T05:00:00Z")).toBe(false); // 06:00 (end excluded)
    // not wrapping
    expect(timeBetween(at("2026-11-22T14:00:00Z"), "09:00", "17:00", "America/New_York")).toBe(true); // 09:00 EST
    expect(timeBetween(at("2026-11-22T13:59:00Z"), "09:00", "17:00", "America/New_York")).toBe(false); // 08:59 EST
    expect(timeBetween(at("2026-07-22T13:00:00Z"), "09:00", "17:00", "America/New_York")).toBe(true); // 09:00 EDT
  });

  it("time_between as a policy condition, with an injected clock", () => {
    const s = compileDocument(
      {
        version: "2024-01-01",
        statements: [
          { effect: "Allow", actions: ["*"], resources: ["*"] },
          { effect: "Deny", actions: ["*"], resources: ["model:batch-*"], condition: { time_between: { start: "08:00", end: "20:00", timezone: "Asia/Tokyo" } } },
        ],
      },
      "p",
    );
    // 08:00-20:00 Tokyo = 23:00-11:00 UTC
    expect(evaluate(s, req({ model: "batch-1", now: at("2026-11-22T12:00:00Z") })).allowed).toBe(true); // 21:00 Tokyo
    expect(evaluate(s, req({ model: "batch-1", now: at("2026-11-22T23:30:00Z") })).allowed).toBe(false); // 08:30 Tokyo
    expect(evaluate(s, req({ model: "other", now: at("2026-11-22T23:30:00Z") })).allowed).toBe(true);
  });
});

// A store stand-in for KeyCache: list/get and change events.
function fakeStore(objs: Array<{ name: string; spec: any }>) {
  const ee = new EventEmitter() as any;
  const map = new Map(objs.map((o) => [o.name, { kind: "ApiKey", name: o.name, owner: "api", spec: o.spec, createdAt: "2026-01-01T00:00:00Z", deleting: false }]));
  ee.list = () => [...map.values()];
  ee.get = (_k: string, n: string) => map.get(n);
  ee.set = (name: string, spec: any) => {
    map.set(name, { kind: "ApiKey", name, owner: "api", spec, createdAt: "2026-01-01T00:00:00Z", deleting: false });
    ee.emit("change", [{ kind: "ApiKey", name }]);
  };
  return ee;
}

/** A key cache fed by its controller, the way a running svc feeds it (keys follow the store). */
function followingCache(store: any): KeyCache {
  const keys = new KeyCache();
  const ctl = apiKeyController({ keys, policies: new PolicyIndex() });
  new ControllerManager({ store, controllers: [ctl], fallback: acceptedController(), log: jsonLogger({ write: () => {} }), resyncMs: 0 }).attach();
  return keys;
}

function setup(spec: Record<string, unknown>, start = "2026-11-22T10:00:00Z") {
  let t = at(start);
  const hash = `sha256:${hashSecret("s")}`;
  const store = fakeStore([{ name: "k", spec: { key_type: "user", secretHash: hash, ...spec } }]);
  const keys = followingCache(store);
  const limits = new Limits({} as any, keys, { now: () => t, flushMs: 0 });
  const est = { spend: 100, tokens: 10, requestTokens: 10, priced: true, model: "m" };
  return {
    key: () => keys.get("k") as KeyEntry,
    limits,
    est,
    advance: (ms: number) => (t += ms),
    patch: (s: Record<string, unknown>) => store.set("k", { key_type: "user", secretHash: hash, ...s }),
    admit(e = est) {
      try {
        return limits.admit(keys.get("k")!, e);
      } catch (err) {
        return err as SvcError;
      }
    },
  };
}

describe("limits", () => {
  it("token bucket: burst, refill per_minute/60 a second, true Retry-After", () => {
    const s = setup({ rate_limits: { per_minute: 6, burst: 3 } });
    for (let i = 0; i < 3; i++) expect(s.admit()).not.toBeInstanceOf(SvcError);
    const e = s.admit() as SvcError;
    expect(statusOf(e)).toBe(429);
    expect(errorHeaders(e)["retry-after"]).toBe("10"); // 6/minute = one every 10 s
    s.advance(9_000);
    expect(errorHeaders(s.admit() as SvcError)["retry-after"]).toBe("1");
    s.advance(1_000);
    expect(s.admit()).not.toBeInstanceOf(SvcError);
    expect(s.admit()).toBeInstanceOf(SvcError);
    s.advance(60_000); // refills to burst, not beyond
    for (let i = 0; i < 3; i++) expect(s.admit()).not.toBeInstanceOf(SvcError);
    expect(s.admit()).toBeInstanceOf(SvcError);
  });

  it("per_day sliding window frees a slot exactly a day after the oldest admission", () => {
    const s = setup({ rate_limits: { per_day: 2 } });
    s.admit();
    s.advance(3_600_000);
    s.admit();
    const e = s.admit() as SvcError;
    expect(e.message).toContain("per_day=2");
    expect(Number(errorHeaders(e)["retry-after"])).toBe(23 * 3600);
    s.advance(23 * 3_600_000);
    expect(s.admit()).not.toBeInstanceOf(SvcError);
    expect(s.admit()).toBeInstanceOf(SvcError);
  });

  it("changing limits keeps what was used", () => {
    const s = setup({ rate_limits: { per_minute: 2 } });
    s.admit();
    s.admit();
    expect(s.admit()).toBeInstanceOf(SvcError);
    s.patch({ rate_limits: { per_minute: 4 } });
    expect(s.admit()).not.toBeInstanceOf(SvcError);
    expect(s.admit()).not.toBeInstanceOf(SvcError);
    expect(s.admit()).toBeInstanceOf(SvcError);
  });

  it("reservation, settlement, and the daily budget resetting at the UTC day boundary", () => {
    const s = setup({ budget_limits: { daily: 0.0003, total: 1 } }, "2026-11-30T23:59:00Z"); // 300 micro-USD
    const a1 = s.admit() as any;
    const a2 = s.admit() as any;
    const a3 = s.admit() as any; // reserved 300: the third was admitted at 200 < 300
    expect(a3).not.toBeInstanceOf(SvcError);
    expect(s.admit()).toBeInstanceOf(SvcError); // 300 reserved
    s.limits.settle(a1, 50, 5, true);
    s.limits.settle(a2, 50, 5, true);
    s.limits.settle(a3, 50, 5, true);
    expect(s.limits.spendOf(s.key())).toEqual({ day: 150, month: 150, total: 150 });
    const a4 = s.admit() as any; // 150 < 300
    s.limits.settle(a4, 200, 5, true); // 350
    const e = s.admit() as SvcError;
    expect(e.code).toBe("budget_exceeded");
    expect(e.message).toContain("daily=");
    s.advance(60_000); // next UTC day (and month)
    expect(s.admit()).not.toBeInstanceOf(SvcError);
    expect(s.limits.spendOf(s.key())).toEqual({ day: 0, month: 0, total: 350 });
  });

  it("a failed request gives back its max_requests slot", () => {
    const s = setup({ key_type: "temporary", permissions: { max_requests: 1 } });
    const a = s.admit() as any;
    s.limits.settle(a, 0, 0, false);
    const b = s.admit() as any;
    expect(b).not.toBeInstanceOf(SvcError);
    s.limits.settle(b, 10, 1, true);
    expect((s.admit() as SvcError).code).toBe("quota_exceeded");
  });

  it("cost is integer micro-USD, rounded up", () => {
    expect(costMicros({ inPerM: 150_000, outPerM: 600_000 }, 1000, 500)).toBe(450); // $0.15 / $0.60 per M
    expect(costMicros({ inPerM: 1, outPerM: 1 }, 1, 1)).toBe(1);
    expect(costMicros({ inPerM: 0, outPerM: 0 }, 100, 100)).toBe(0);
  });
});

describe("keys", () => {
  it("secrets are sk-svc- + 32 random bytes in base62", () => {
    const s = generateSecret();
    expect(s).toMatch(/^sk-svc-[0-9A-Za-z]{43}$/);
    expect(generateSecret()).not.toBe(s);
    expect(base62(new Uint8Array(32))).toBe("0".repeat(43));
  });

  it("IP allowlists match v4 and v6 CIDR ranges", () => {
    const r = ["10.0.0.0/8", "2001:db8::/32", "192.168.0.1"].map(parseRange);
    expect(ipAllowed("10.255.0.1", r)).toBe(true);
    expect(ipAllowed("11.0.0.1", r)).toBe(false);
    expect(ipAllowed("2001:db8:ffff::1", r)).toBe(true);
    expect(ipAllowed("2001:db9::1", r)).toBe(false);
    expect(ipAllowed("192.168.0.1", r)).toBe(true);
    expect(ipAllowed("::ffff:10.1.1.1", r)).toBe(true);
    expect(ipAllowed("not an ip", r)).toBe(false);
  });

  it("the cache follows the store (through its controller): revocation and expiry are effective at once", () => {
    let t = at("2026-11-22T10:00:00Z");
    const h = `sha256:${hashSecret("secret-1")}`;
    const store = fakeStore([{ name: "k1", spec: { key_type: "user", secretHash: h, expires_at: "2026-11-22T10:00:05Z" } }]);
    const keys = followingCache(store);
    expect(keys.authenticate("secret-1", t).ok).toBe(true);
    expect(keys.authenticate("secret-2", t)).toEqual({ ok: false, code: "invalid_api_key" });
    t += 5_000;
    expect(keys.authenticate("secret-1", t)).toMatchObject({ ok: false, code: "key_expired" });
    store.set("k1", { key_type: "user", secretHash: h, revoked_at: "2026-11-22T10:00:01Z" });
    expect(keys.authenticate("secret-1", t - 5_000)).toMatchObject({ ok: false, code: "key_revoked" });
  });

  it("PATCH bodies merge as JSON merge patch", () => {
    expect(mergePatch({ per_minute: 1, burst: 2 }, { per_minute: 5, burst: null })).toEqual({ per_minute: 5 });
  });
});
