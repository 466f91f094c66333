// The balancer's choices with a seeded random source (exact, so they cannot flake): weights,
// weight 0 as a standby, latency (EWMA), cost, cooldown after K failures within the window.
import { describe, expect, it } from "vitest";
import { DeploymentState, noteFailure, pick, type Deployment, type Group } from "../../engines/providers/balancer";
import { SvcError } from "../../engines/errors";

/** mulberry32: a small seeded generator */
function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function group(ws: number[], prices: number[] = ws.map(() => 0)): Group {
  const deployments: Deployment[] = ws.map((weight, i) => ({
    target: { provider: `p${i}`, type: "openai", model: "m", upstreamModel: "m", priced: true, timeoutMs: 1000 },
    weight,
    priceKey: prices[i],
    cooldown: { failures: 3, windowMs: 60_000, ms: 30_000 },
    state: new DeploymentState(),
  }));
  return { model: "m", deployments, settings: { strategy: "weighted", maxAttempts: 3, backoffMs: 0, maxWaitMs: 0 } };
}

describe("balancer", () => {
  it("weighted: 1,000 draws with a seeded source land within 3 sd of the weights", () => {
    const g = group([5, 3, 2]);
    const h = { random: seeded(42), now: () => 0 };
    const n = [0, 0, 0];
    for (let i = 0; i < 1000; i++) n[g.deployments.indexOf(pick(g, "weighted", new Set(), h)!)]++;
    for (const [i, p] of [0.5, 0.3, 0.2].entries()) expect(Math.abs(n[i] - 1000 * p)).toBeLessThan(3 * Math.sqrt(1000 * p * (1 - p)));
  });

  it("weight 0 serves only when the weighted deployments are tried or cooling", () => {
    const g = group([0, 1]);
    const h = { random: seeded(1), now: () => 1000 };
    for (let i = 0; i < 50; i++) expect(pick(g, "weighted", new Set(), h)!.target.provider).toBe("p1");
    expect(pick(g, "weighted", new Set([g.deployments[1]]), h)!.target.provider).toBe("p0");
  });

  it("latency prefers an untried deployment, then the lowest moving average; cost the cheapest", () => {
    const g = group([1, 1, 1], [3, 1, 2]);
    const h = { random: seeded(7), now: () => 0 };
    g.deployments[0].state.latencyMs = 50;
    g.deployments[1].state.latencyMs = 20;
    expect(pick(g, "latency", new Set(), h)!.target.provider).toBe("p2");
    g.deployments[2].state.latencyMs = 30;
    expect(pick(g, "latency", new Set(), h)!.target.provider).toBe("p1");
    expect(pick(g, "cost-optimized", new Set(), h)!.target.provider).toBe("p1");
  });

  it("cools a deployment after K failures within the window, and skips it until the cooldown ends", () => {
    const g = group([1, 1]);
    const d = g.deployments[0];
    const e = new SvcError("upstream", "upstream_error", "x");
    noteFailure(d, e, 0);
    noteFailure(d, e, 70_000); // the first fell out of the 60 s window
    noteFailure(d, e, 80_000);
    expect(d.state.coolUntil).toBe(0);
    noteFailure(d, e, 90_000);
    expect(d.state.coolUntil).toBe(120_000);
    const during = { random: seeded(3), now: () => 100_000 };
    for (let i = 0; i < 20; i++) expect(pick(g, "weighted", new Set(), during)!.target.provider).toBe("p1");
    g.deployments[1].state.coolUntil = 130_000;
    expect(pick(g, "weighted", new Set(), during)).toBeUndefined();
    expect(pick(g, "weighted", new Set(), { random: seeded(3), now: () => 125_000 })!.target.provider).toBe("p0");
  });

  it("a 429 cools at once, for its Retry-After when sent (shorter or longer than cooldown.seconds), else cooldown.seconds", () => {
    const rate429 = (retryAfterSeconds?: number) =>
      new SvcError("rate_limited", "rate_limit_exceeded", "x", null, retryAfterSeconds === undefined ? {} : { retryAfterSeconds });
    const g = group([1, 1, 1, 1]);
    const [shorter, longer, none, zero] = g.deployments;
    noteFailure(shorter, rate429(12), 1000); // cooldown.seconds is 30: the shorter Retry-After wins
    expect(shorter.state.coolUntil).toBe(13_000);
    noteFailure(longer, rate429(90), 1000);
    expect(longer.state.coolUntil).toBe(91_000);
    noteFailure(none, rate429(), 1000);
    expect(none.state.coolUntil).toBe(31_000);
    noteFailure(zero, rate429(0), 1000); // "retry now": not cooled
    expect(zero.state.coolUntil).toBe(0);
  });
});
