// With limits shared in Redis, answers carry the same x-ratelimit-* headers as in embedded mode
// (the per_minute bucket, else the hour window), counted on the one shared bucket whatever
// replica serves; refusals (429, 402) carry them too (the near-limit alert that reads them:
// alerts.test.ts).
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { missingServices } from "../helpers/services";
import { expectError } from "../gateway/fixtures";
import { startCluster, clusterKey, type Replica } from "./cluster";

const missing = missingServices();
if (missing) console.warn(`test/scale skipped: ${missing}`);
const msg = [{ role: "user" as const, content: "hi" }];

describe.skipIf(!!missing)("x-ratelimit-* headers with limits shared by 2 replicas", () => {
  let rs: Replica[] = [];
  let stop: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    // "dollar" costs $1 a token: a request with max_tokens 5 reserves $13 and spends $7
    ({ rs, stop } = await startCluster(2));
  }, 120_000);

  afterAll(async () => {
    await stop?.();
  });

  const key = (body: Record<string, unknown>) => clusterKey(rs, { name: "headers", ...body });

  const rateOf = (h: Headers) => ({
    limit: h.get("x-ratelimit-limit-requests"),
    remaining: h.get("x-ratelimit-remaining-requests"),
    reset: h.get("x-ratelimit-reset-requests"),
  });

  it("per_minute: remaining counts down on the one shared bucket across replicas; the 429 carries the headers", async () => {
    const k = await key({ rate_limits: { per_minute: 4 } });
    const seen: string[] = [];
    for (let i = 0; i < 4; i++) {
      const { response } = await rs[i % 2].client(k.secret).chat.completions.create({ model: "gpt-x", messages: msg }).withResponse();
      const h = rateOf(response.headers);
      expect(h.limit).toBe("4");
      expect(h.reset).toMatch(/^\d+s$/);
      expect(Number(h.reset!.slice(0, -1))).toBeGreaterThan(0);
      expect(Number(h.reset!.slice(0, -1))).toBeLessThanOrEqual(60);
      seen.push(h.remaining!);
    }
    expect(seen).toEqual(["3", "2", "1", "0"]);
    const e = await expectError(rs[1].client(k.secret).chat.completions.create({ model: "gpt-x", messages: msg }), 429, "rate_limit_exceeded");
    expect(rateOf(e.headers)).toMatchObject({ limit: "4", remaining: "0" });
    expect(Number(e.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  });

  it("per_hour without per_minute: the headers describe the hour window", async () => {
    const k = await key({ rate_limits: { per_hour: 3 } });
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { response } = await rs[(i + 1) % 2].client(k.secret).chat.completions.create({ model: "gpt-x", messages: msg }).withResponse();
      const h = rateOf(response.headers);
      expect(h.limit).toBe("3");
      expect(Number(h.reset!.slice(0, -1))).toBeGreaterThan(3500); // the window empties an hour after the newest admission
      expect(Number(h.reset!.slice(0, -1))).toBeLessThanOrEqual(3600);
      seen.push(h.remaining!);
    }
    expect(seen).toEqual(["2", "1", "0"]);
    const e = await expectError(rs[0].client(k.secret).chat.completions.create({ model: "gpt-x", messages: msg }), 429, "rate_limit_exceeded");
    expect(e.message).toContain("per_hour=3");
    expect(rateOf(e.headers)).toMatchObject({ limit: "3", remaining: "0" });
  });

  it("a 402 (budget, per_request_max) carries the headers too, and takes no slot", async () => {
    const b = await key({ rate_limits: { per_minute: 10 }, budget_limits: { total: 5 } });
    await rs[0].client(b.secret).chat.completions.create({ model: "dollar", messages: msg, max_tokens: 5 }); // spends $7
    // settled ($7 spent) or not yet ($13 reserved), the $5 budget is used up
    const e = await expectError(rs[1].client(b.secret).chat.completions.create({ model: "dollar", messages: msg, max_tokens: 5 }), 402, "budget_exceeded");
    expect(rateOf(e.headers)).toMatchObject({ limit: "10", remaining: "9" });

    const p = await key({ rate_limits: { per_minute: 10 }, token_limits: { per_request_max: 50 } });
    const over = await expectError(rs[1].client(p.secret).chat.completions.create({ model: "gpt-x", messages: msg, max_tokens: 100 }), 402, "quota_exceeded");
    expect(over.message).toContain("per_request_max=50");
    expect(rateOf(over.headers)).toMatchObject({ limit: "10", remaining: "10" });
    const { response } = await rs[0].client(p.secret).chat.completions.create({ model: "gpt-x", messages: msg, max_tokens: 10 }).withResponse();
    expect(rateOf(response.headers)).toMatchObject({ limit: "10", remaining: "9" });
  });
});
