// Limits and the gate at their boundaries, with injected clocks (no server): the UTC day and
// month roll-over as the policy conditions and the key routes' usage see it on an idle server.
import { describe, it, expect } from "vitest";
import { EventEmitter } from "node:events";
import { Limits } from "../../engines/gateway/limits";
import { Gate } from "../../engines/gateway/gate";
import { KeyCache, hashSecret, type KeyEntry } from "../../engines/gateway/keys";
import { PolicyIndex } from "../../engines/gateway/policy";
import { SvcError } from "../../engines/errors";
import { ControllerManager } from "../../controllers/runtime";
import { apiKeyController } from "../../controllers/kinds/api-key";
import { acceptedController } from "../../controllers/kinds/accepted";
import { jsonLogger } from "../../api/log";
import type { Caller } from "../../engines/gateway/pipeline-types";

const at = (iso: string) => Date.parse(iso);

// A store stand-in for KeyCache (as in units.test.ts): list/get and change events.
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

function setup(spec: Record<string, unknown>, start: string) {
  let t = at(start);
  const hash = `sha256:${hashSecret("s")}`;
  const store = fakeStore([{ name: "k", spec: { key_type: "user", secretHash: hash, ...spec } }]);
  const keys = new KeyCache();
  const policies = new PolicyIndex();
  new ControllerManager({ store, controllers: [apiKeyController({ keys, policies })], fallback: acceptedController(), log: jsonLogger({ write: () => {} }), resyncMs: 0 }).attach();
  const now = () => t;
  const limits = new Limits({} as any, keys, { now, flushMs: 0 });
  const gate = new Gate({ keys, policies, limits, allowUnauthenticatedLoopback: () => false, now });
  return {
    key: () => keys.get("k") as KeyEntry,
    limits,
    gate,
    advance: (ms: number) => (t += ms),
    patch: (extra: Record<string, unknown>) => store.set("k", { key_type: "user", secretHash: hash, ...extra }),
  };
}

const caller = (): Caller => ({ token: "s", ip: "127.0.0.1", loopback: true, requestId: "req_" + Math.random().toString(36).slice(2), route: "/mcp/call" });

describe("period roll-over on an idle server", () => {
  it("a monthly_budget_over Deny stops applying when the UTC month rolls over", async () => {
    const s = setup(
      {
        budget_limits: { monthly: 10 },
        policy: {
          version: "2024-01-01",
          statements: [
            { effect: "Allow", actions: ["*"], resources: ["*"] },
            { effect: "Deny", actions: ["*"], resources: ["*"], condition: { monthly_budget_over: 1 } },
          ],
        },
      },
      "2026-11-30T23:00:00Z",
    );
    // spend 2 USD in November (over the Deny's threshold of 1)
    const a = s.limits.admit(s.key(), { spend: 100, tokens: 10, requestTokens: 10, priced: true, model: "m" });
    s.limits.settle(a, 2_000_000, 10, true);
    const call = () => s.gate.enter(caller(), { action: "tools:call", scope: "tools", audit: "tools.call", resource: "tool:echo", metered: true, spendMicros: 0 });
    await expect(call()).rejects.toMatchObject({ code: "policy_denied" });
    // December: the month-to-date spend is 0, so the Deny no longer holds (no other request came
    // in between to roll the periods over)
    s.advance(2 * 3_600_000);
    const v = await call();
    expect(v.key?.id).toBe("k");
    s.gate.finish(v, { status: "success" });
  });

  it("the key routes' usage shows a new day as empty before any request of that day", () => {
    const s = setup({ budget_limits: { daily: 10 } }, "2026-11-22T23:59:00Z");
    const a = s.limits.admit(s.key(), { spend: 100, tokens: 10, requestTokens: 10, priced: true, model: "m" });
    s.limits.settle(a, 500_000, 15, true);
    expect(s.limits.report("k").today).toMatchObject({ spend: 0.5, tokens: 15, requests: 1 });
    s.advance(120_000); // 2026-11-23T00:01Z: nothing was admitted since midnight
    const r = s.limits.report("k");
    expect(r.today).toMatchObject({ spend: 0, tokens: 0, requests: 0 });
    expect(r.month).toMatchObject({ spend: 0.5, tokens: 15, requests: 1 });
  });
});

describe("rate windows changed in place", () => {
  it("lowering per_day from above 10,000 to below keeps today's admissions counted, not yesterday's", () => {
    // per_day above 10,000 is counted in 120 slices of 12 minutes (a slot of the UTC day);
    // yesterday 09:00 fills slot 45, today 02:00 fills slot 10
    const s = setup({ rate_limits: { per_day: 20_000 } }, "2026-11-21T09:00:00Z");
    const est = { spend: 0, tokens: 0, requestTokens: 0, priced: true, model: "m" };
    for (let i = 0; i < 6_000; i++) s.limits.settle(s.limits.admit(s.key(), est), 0, 0, true);
    s.advance(17 * 3_600_000); // 2026-11-22T02:00Z
    for (let i = 0; i < 12_000; i++) s.limits.settle(s.limits.admit(s.key(), est), 0, 0, true);
    s.advance(8.5 * 3_600_000); // 10:30Z: yesterday's 09:00 slot left the window, today's 12,000 are in it
    // what was used stays used: 12,000 admissions in the last day are over a per_day of 5,000
    s.patch({ rate_limits: { per_day: 5_000 } });
    let e: unknown;
    try {
      s.limits.admit(s.key(), est);
    } catch (err) {
      e = err;
    }
    expect(e).toBeInstanceOf(SvcError);
    expect((e as SvcError).code).toBe("rate_limit_exceeded");
    expect(s.limits.rate(s.key())).toMatchObject({ limit: 5_000, remaining: 0 });
  });
});
