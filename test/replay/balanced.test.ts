// Balanced routes (Providers that give a model a weight) in a replay: the current and the proposed
// state draw the same deployment for the same entry, whatever either refused before it; and a call
// is settled at the prices of the deployment that serves it, as the live balancer settles it
// (balancer.ts adopt), not at the group's highest prices, which only the estimate uses.
import { describe, it, expect } from "vitest";
import { replayPages, type ReplayEntry, type ReplayObject } from "../../engines/gateway/replay";
import { hashSecret } from "../../engines/gateway/keys";
import { costMicros } from "../../engines/providers/types";

const at = new Date(0).toISOString();
const day = Date.parse("2026-11-20T00:00:00Z");
const provider = (name: string, model: string, price: number, weight: number): ReplayObject => ({
  kind: "Provider", name, owner: "config:t", createdAt: at,
  spec: { type: "openai", baseUrl: "http://127.0.0.1:9", models: [{ name: model, inputPerMillion: price, outputPerMillion: price, weight }] },
});
const key = (name: string, extra: Record<string, unknown> = {}): ReplayObject => ({ kind: "ApiKey", name, owner: "config:t", createdAt: at, spec: { name, secretHash: `sha256:${hashSecret(name)}`, ...extra } });

function state(o: { revokeA?: boolean; budgetB?: number } = {}): ReplayObject[] {
  return [
    // "m": two deployments drawn half and half
    provider("p1", "m", 1, 1),
    provider("p2", "m", 1, 1),
    // "c": the cheap deployment serves; the dear one (weight 0) only when the cheap one is out
    provider("p3", "c", 1, 1),
    provider("p4", "c", 100, 0),
    key("ka", o.revokeA ? { revoked_at: "2026-01-01T00:00:00Z" } : {}),
    key("kb", o.budgetB !== undefined ? { budget_limits: { daily: o.budgetB } } : {}),
  ];
}
const entry = (i: number, keyId: string, model: string, provider: string): ReplayEntry => ({
  id: `aud_${String(i).padStart(6, "0")}`, ts: day + i * 1000, keyId, action: "chat.completions", model, provider, status: "success",
  promptTokens: 1000, completionTokens: 1000, costMicros: costMicros({ inPerM: 1e6, outPerM: 1e6 }, 1000, 1000), ip: null,
});

describe("replay of balanced routes", () => {
  it("revoking one key reroutes no call of another key", async () => {
    const page: ReplayEntry[] = [];
    for (let i = 0; i < 200; i++) page.push(entry(i, i % 2 ? "ka" : "kb", "m", "p1"));
    for (const worker of ["never", "always"] as const) {
      const r = await replayPages([page], state(), state({ revokeA: true }), { worker });
      const a = r.keys.find((k) => k.key === "ka")!;
      expect(a.newRefusals).toMatchObject([{ code: "key_revoked", count: 100 }]);
      // key B's calls and their routing do not change
      const b = r.keys.find((k) => k.key === "kb")!;
      expect(b.reroutes, worker).toEqual([]);
      expect(r.totals.rerouted).toBe(0);
    }
  });

  it("a call is settled at the price of the deployment that serves it", async () => {
    const page: ReplayEntry[] = [];
    for (let i = 0; i < 10; i++) page.push(entry(i, "kb", "c", "p3"));
    const r = await replayPages([page], state(), state(), { worker: "never" });
    // p3 serves every call at $1/M (what the live gate recorded); p4's $100/M never applies
    expect(r.totals.spend).toEqual({ recordedMicros: 10 * 2000, currentMicros: 10 * 2000, proposedMicros: 10 * 2000 });
    // so a daily budget of 3 cents admits all ten ($0.02), as it does live
    const b = await replayPages([page], state(), state({ budgetB: 0.03 }), { worker: "never" });
    expect(b.totals.newRefusals).toBe(0);
  });
});
