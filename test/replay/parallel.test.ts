// The proposed state judged on a worker thread (engines/gateway/replay/parallel.ts) gives the same
// report as both states judged on one thread: refusals (first time and entry), reroutes, spend
// and alerts, over a few thousand entries with rate refusals, a Deny and a price change.
import { describe, it, expect } from "vitest";
import { replayPages, type ReplayEntry, type ReplayObject } from "../../engines/gateway/replay";
import { hashSecret } from "../../engines/gateway/keys";
import { WorkerJudge, workerHooks } from "../../engines/gateway/replay/parallel";

const at = new Date(0).toISOString();
function state(proposed: boolean): ReplayObject[] {
  return [
    { kind: "Provider", name: "p1", owner: "config:t", createdAt: at, spec: { type: "openai", baseUrl: "http://127.0.0.1:9", models: [{ name: "m1", inputPerMillion: proposed ? 3 : 2, outputPerMillion: 8 }] } },
    { kind: "Provider", name: "p2", owner: "config:t", createdAt: at, spec: { type: "openai", baseUrl: "http://127.0.0.1:9", models: [{ name: "m2", inputPerMillion: 1, outputPerMillion: 1 }] } },
    { kind: "ApiKey", name: "ka", owner: "config:t", createdAt: at, spec: { name: "a", organization_id: "o", secretHash: `sha256:${hashSecret("a")}`, rate_limits: { per_minute: proposed ? 3 : 60 }, budget_limits: { daily: 0.5 } } },
    {
      kind: "ApiKey", name: "kb", owner: "config:t", createdAt: at,
      spec: { name: "b", secretHash: `sha256:${hashSecret("b")}`, ...(proposed ? { policy: { version: "2024-01-01", statements: [{ effect: "Deny", actions: ["*"], resources: ["provider:p2"] }, { effect: "Allow", actions: ["*"], resources: ["*"] }] } } : {}) },
    },
  ];
}

function pages(n: number): ReplayEntry[][] {
  const day = Date.parse("2026-11-20T00:00:00Z");
  const out: ReplayEntry[][] = [];
  for (let i = 0; i < n; i += 500) {
    const p: ReplayEntry[] = [];
    for (let j = i; j < Math.min(n, i + 500); j++) {
      const ok = j % 11 !== 0;
      p.push({ id: `aud_${j}`, ts: day + j * 6_000, keyId: j % 2 ? "ka" : "kb", action: j % 13 === 0 ? "tools.call" : "chat.completions", model: j % 3 ? "m1" : "m2", provider: j % 3 ? "p1" : "p2", status: ok ? "success" : "upstream_error", promptTokens: ok ? 900 : 0, completionTokens: ok ? 300 : 0, costMicros: 10, ip: null });
    }
    out.push(p);
  }
  return out;
}

describe("replay on a worker thread", () => {
  it("reports exactly what one thread reports", async () => {
    // a worker does start here (else "always" would judge on this thread and prove nothing)
    const w = WorkerJudge.start(state(true));
    expect(w).not.toBeNull();
    await w!.stop();
    const ps = pages(4000);
    const here = await replayPages(ps, state(false), state(true), { worker: "never" });
    const there = await replayPages(ps, state(false), state(true), { worker: "always" });
    expect(here.totals.newRefusals).toBeGreaterThan(0);
    expect(here.totals.spend.proposedMicros).not.toBe(here.totals.spend.currentMicros);
    expect(there).toEqual(here);
  }, 60_000);

  it("replays again on one thread, with the same report, when the worker dies part way", async () => {
    const ps = pages(4000);
    const here = await replayPages(ps, state(false), state(true), { worker: "never" });
    // the proposed state's worker (the second to start) is terminated once it has judged its first page
    let judgedPages = 0;
    let started = 0;
    workerHooks.started = (w) => {
      // (pages are sent ahead: answers already on their way after terminate() are not counted)
      if (++started % 2 === 0) w.on("message", () => {
        if (judgedPages === 0 && ++judgedPages === 1) void w.terminate();
      });
    };
    try {
      const r = await replayPages(ps, state(false), state(true), { worker: "always" });
      expect(judgedPages).toBe(1);
      expect(r.workerFailed).toMatch(/replay worker exited/);
      const { workerFailed: _, ...rest } = r;
      expect(rest).toEqual(here);
      // a one-pass source cannot be read again: the failure is the replay's answer
      judgedPages = 0;
      started = 0;
      const once = (async function* () { yield* ps; })();
      await expect(replayPages(once, state(false), state(true), { worker: "always" })).rejects.toThrow(/replay worker exited/);
    } finally {
      workerHooks.started = undefined;
    }
  }, 60_000);
});
