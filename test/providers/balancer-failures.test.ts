// The balancer's bookkeeping of failures and choices, driven through routedChat with a fake
// adapter (no network, no timing): what counts toward a deployment's cooldown (upstream failures:
// 5xx, timeouts, refused connections, 429; not a request the provider refused as the client's
// (400), nor a client that left mid-stream), that a standby (weight 0) waits for the others under
// every strategy, that a first choice that cooled meanwhile is not waited for when another
// deployment is free, that the served deployment's currency goes with its prices, and that a
// burst of other failures does not cut a longer Retry-After cooldown short.
import { describe, expect, it } from "vitest";
import { DeploymentState, noteFailure, pick, routedChat, type BalancerHooks, type Deployment, type Group, type RoutedTarget } from "../../engines/providers/balancer";
import type { ProviderAdapter, RouteTarget } from "../../engines/providers/types";
import type { ChatEvent, ChatRequest } from "../../engines/chat/types";
import { Cancellation } from "../../engines/chat/cancel";
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

function group(ws: number[], opts: { prices?: number[]; currencies?: (string | undefined)[]; failures?: number; maxAttempts?: number; maxWaitMs?: number } = {}): Group {
  const deployments: Deployment[] = ws.map((weight, i) => ({
    target: { provider: `p${i}`, type: "openai", model: "m", upstreamModel: `up${i}`, inPerM: (opts.prices?.[i] ?? 1) * 1e6, outPerM: (opts.prices?.[i] ?? 1) * 1e6, priced: true, currency: opts.currencies?.[i], timeoutMs: 1000 },
    weight,
    priceKey: opts.prices?.[i] ?? 0,
    cooldown: { failures: opts.failures ?? 3, windowMs: 60_000, ms: 30_000 },
    state: new DeploymentState(),
  }));
  return { model: "m", deployments, settings: { strategy: "weighted", maxAttempts: opts.maxAttempts ?? 3, backoffMs: 0, maxWaitMs: opts.maxWaitMs ?? 0 } };
}

const routed = (g: Group, first: Deployment): RoutedTarget => ({ ...first.target, type: "routed", group: g, first, strategy: g.settings.strategy });

const req: ChatRequest = { model: "m", messages: [{ role: "user", content: "hi" }] } as ChatRequest;

/** hooks whose adapter answers per provider: an error to throw, or a stream of events */
function hooks(answer: (t: RouteTarget, cancel: Cancellation) => Promise<AsyncIterable<ChatEvent>>, now = () => 1_000_000): BalancerHooks & { calls: string[] } {
  const calls: string[] = [];
  const adapter: ProviderAdapter = {
    chat: (t, _r, cancel) => {
      calls.push(t.provider);
      return answer(t, cancel);
    },
  };
  return { calls, adapter: () => adapter, resolve: (t) => t, random: seeded(5), now };
}

async function* ok(): AsyncGenerator<ChatEvent> {
  yield { type: "text", text: "ok" };
  yield { type: "done", finishReason: "stop", usage: { promptTokens: 1, completionTokens: 1 } } as ChatEvent;
}

const drain = async (it: AsyncIterable<ChatEvent>) => {
  for await (const _ of it) void _;
};

describe("balancer: what counts as a deployment's failure", () => {
  it("a request the provider refused as the client's (400) does not cool the deployment down", async () => {
    const g = group([1], { failures: 2 });
    const d = g.deployments[0];
    const h = hooks(async () => {
      throw new SvcError("invalid", "invalid_request", "provider p0 refused the request: max_tokens is too large");
    });
    for (let i = 0; i < 5; i++) await expect(routedChat(routed(g, d), req, new Cancellation(), h)).rejects.toMatchObject({ kind: "invalid" });
    expect(h.calls).toEqual(["p0", "p0", "p0", "p0", "p0"]); // never retried
    expect(d.state.coolUntil).toBe(0); // five client mistakes: still in service
    expect(d.state.failuresTotal).toBe(0);
    expect(d.state.inFlight).toBe(0);
  });

  it("a 5xx still counts and cools after cooldown.failures", async () => {
    const g = group([1], { failures: 2, maxAttempts: 1 });
    const d = g.deployments[0];
    const h = hooks(async () => {
      throw new SvcError("upstream", "upstream_error", "provider p0 answered 500");
    });
    await expect(routedChat(routed(g, d), req, new Cancellation(), h)).rejects.toMatchObject({ kind: "upstream" });
    await expect(routedChat(routed(g, d), req, new Cancellation(), h)).rejects.toMatchObject({ kind: "upstream" });
    expect(d.state.failuresTotal).toBe(2);
    expect(d.state.coolUntil).toBe(1_000_000 + 30_000);
  });

  it("a client that leaves mid-stream is not the deployment's failure", async () => {
    const g = group([1], { failures: 2 });
    const d = g.deployments[0];
    const h = hooks(async (_t, cancel) =>
      (async function* () {
        yield { type: "text", text: "partial" } as ChatEvent;
        // the client disconnects: the API aborts the cancellation and the upstream read throws
        cancel.abort(new DOMException("client disconnected", "AbortError"));
        throw new DOMException("client disconnected", "AbortError");
      })(),
    );
    for (let i = 0; i < 4; i++) {
      const events = await routedChat(routed(g, d), req, new Cancellation(), h);
      await expect(drain(events)).rejects.toMatchObject({ name: "AbortError" });
    }
    expect(d.state.failuresTotal).toBe(0);
    expect(d.state.coolUntil).toBe(0);
    expect(d.state.inFlight).toBe(0);
  });

  it("a stream the upstream broke still counts", async () => {
    const g = group([1], { failures: 1 });
    const d = g.deployments[0];
    const h = hooks(async () =>
      (async function* () {
        yield { type: "text", text: "partial" } as ChatEvent;
        throw new SvcError("upstream", "upstream_error", "connection to provider p0 failed mid-response");
      })(),
    );
    const events = await routedChat(routed(g, d), req, new Cancellation(), h);
    await expect(drain(events)).rejects.toMatchObject({ kind: "upstream" });
    expect(d.state.failuresTotal).toBe(1);
    expect(d.state.coolUntil).toBeGreaterThan(1_000_000);
  });

  it("failures after a 429 do not cut its longer Retry-After cooldown short", () => {
    const g = group([1], { failures: 1 });
    const d = g.deployments[0];
    noteFailure(d, new SvcError("rate_limited", "rate_limit_exceeded", "slow down", null, { retryAfterSeconds: 120 }), 1000);
    expect(d.state.coolUntil).toBe(121_000);
    // a request still in flight on it fails with a 503 (failures: 1 cools for cooldown.seconds, 30 s)
    noteFailure(d, new SvcError("upstream", "upstream_error", "503"), 2000);
    expect(d.state.coolUntil).toBe(121_000);
  });
});

describe("balancer: choices", () => {
  it("a standby (weight 0) waits for the others under every strategy, not only weighted", () => {
    const h = { random: seeded(11), now: () => 0 };
    // least-busy: the weighted deployment is busier, yet the standby is for when it is out
    const busy = group([1, 0]);
    busy.deployments[0].state.inFlight = 4;
    for (let i = 0; i < 20; i++) expect(pick(busy, "least-busy", new Set(), h)!.target.provider).toBe("p0");
    // latency: a standby with no sample is not "tried first"
    const lat = group([1, 0]);
    lat.deployments[0].state.latencyMs = 80;
    for (let i = 0; i < 20; i++) expect(pick(lat, "latency", new Set(), h)!.target.provider).toBe("p0");
    // cost-optimized: the cheapest among the deployments in service, the standby held back
    const cost = group([1, 1, 0], { prices: [3, 2, 1] });
    for (let i = 0; i < 20; i++) expect(pick(cost, "cost-optimized", new Set(), h)!.target.provider).toBe("p1");
    // ...and it serves once the others are out
    cost.deployments[0].state.coolUntil = 10;
    cost.deployments[1].state.coolUntil = 10;
    expect(pick(cost, "cost-optimized", new Set(), h)!.target.provider).toBe("p2");
    expect(pick(lat, "latency", new Set([lat.deployments[0]]), h)!.target.provider).toBe("p1");
  });

  it("a first choice that started cooling before the call is not waited for while another is free", async () => {
    const g = group([1, 1], { maxWaitMs: 0 });
    const [first] = g.deployments;
    const t = routed(g, first);
    // between the choice and the call, a concurrent request's 429 cooled it for a minute
    first.state.coolUntil = 1_000_000 + 60_000;
    const h = hooks(async () => ok());
    const events = await routedChat(t, req, new Cancellation(), h);
    await drain(events);
    expect(h.calls).toEqual(["p1"]);
    expect(t.provider).toBe("p1");
  });

  it("the deployment that served gives its currency with its prices", async () => {
    const g = group([1, 1], { prices: [1, 2], currencies: ["EUR", undefined] });
    const [first] = g.deployments;
    const t = routed(g, first);
    expect(t.currency).toBe("EUR");
    const h = hooks(async (tg) => {
      if (tg.provider === "p0") throw new SvcError("upstream", "upstream_error", "provider p0 answered 500");
      return ok();
    });
    await drain(await routedChat(t, req, new Cancellation(), h));
    expect(h.calls).toEqual(["p0", "p1"]);
    expect(t).toMatchObject({ provider: "p1", inPerM: 2e6, outPerM: 2e6 });
    expect(t.currency).toBeUndefined(); // p1's prices are USD, not p0's EUR
  });
});
