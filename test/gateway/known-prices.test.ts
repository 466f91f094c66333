// A known price is reserved at admission: a media call priced by its units (images, audio
// minutes) or by its quote (video) is admitted only when that price fits under the key's budget,
// so concurrent calls cannot overspend it and a refused call never reaches the provider.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEnv, type Env } from "./fixtures";
import { mediaStandin } from "../media/standin";

const CRED = "known-price-cred";

describe("known prices at admission", () => {
  let env: Env;
  let media: Awaited<ReturnType<typeof mediaStandin>>;

  beforeAll(async () => {
    env = await startEnv();
    media = await mediaStandin(CRED);
    process.env.SVC_TEST_KNOWN_PRICE_CRED = CRED;
    await env.apply([
      {
        kind: "Provider",
        name: "media-up",
        spec: {
          type: "openai",
          baseUrl: media.baseUrl,
          credential: "env:SVC_TEST_KNOWN_PRICE_CRED",
          capabilities: ["image_generation", "transcription", "video"],
          models: [
            { name: "gpt-image-1", perImage: 0.04 },
            { name: "whisper", perAudioMinute: 0.04 },
            { name: "vid", perVideoSecond: 0.01 },
          ],
        },
      },
    ]);
  }, 60_000);
  afterAll(async () => {
    await env?.stop();
    await media?.close();
    delete process.env.SVC_TEST_KNOWN_PRICE_CRED;
  });

  const post = async (path: string, secret: string, body: unknown) => {
    const r = await fetch(`${env.url}${path}`, { method: "POST", headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" }, body: JSON.stringify(body) });
    return { status: r.status, json: (await r.json()) as any };
  };
  const upstreamCalls = (path: string) => media.seen.filter((s) => s.path === path).length;
  const spent = async (id: string) => (await env.api("GET", `/v1/api-keys/${id}`)).json.usage.total.spend_usd as number;

  /** 20 calls at once on a fresh budgeted key: the statuses, and the calls the provider saw. */
  async function concurrent(path: string, budget: number, body: (i: number) => unknown | Promise<unknown>, prepare?: (secret: string) => Promise<unknown[]>) {
    const k = await env.key({ budget_limits: { total: budget, currency: "USD" } });
    const bodies = prepare ? await prepare(k.secret) : await Promise.all(Array.from({ length: 20 }, (_, i) => body(i)));
    const before = upstreamCalls(path);
    const answers = await Promise.all(bodies.map((b) => post(path, k.secret, b)));
    return { k, answers, sent: upstreamCalls(path) - before };
  }

  it("20 concurrent image generations at 0.04 on a 0.10 budget: exactly 2 served and 2 sent upstream", async () => {
    const { k, answers, sent } = await concurrent("/v1/images/generations", 0.1, () => ({ model: "gpt-image-1", prompt: "a cat" }));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(2);
    const refused = answers.filter((a) => a.status !== 200);
    expect(refused).toHaveLength(18);
    for (const a of refused) expect([a.status, a.json.error.code]).toEqual([402, "budget_exceeded"]);
    expect(refused[0].json.error.message).toContain("this call costs 0.04 USD");
    expect(sent).toBe(2);
    expect(await spent(k.id)).toBeCloseTo(0.08, 9);
  });

  it("three images in a row on a 0.10 budget: the third is refused before it is sent, 0.08 spent", async () => {
    const k = await env.key({ budget_limits: { total: 0.1, currency: "USD" } });
    const before = upstreamCalls("/v1/images/generations");
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await post("/v1/images/generations", k.secret, { model: "gpt-image-1", prompt: "a dog" })).status);
    expect(statuses).toEqual([200, 200, 402]);
    expect(upstreamCalls("/v1/images/generations") - before).toBe(2);
    expect(await spent(k.id)).toBeCloseTo(0.08, 9);
  });

  it("n images are priced as n: two images at 0.04 each do not fit a 0.05 budget", async () => {
    const k = await env.key({ budget_limits: { total: 0.05, currency: "USD" } });
    const two = await post("/v1/images/generations", k.secret, { model: "gpt-image-1", prompt: "cats", n: 2 });
    expect([two.status, two.json.error.code]).toEqual([402, "budget_exceeded"]);
    expect((await post("/v1/images/generations", k.secret, { model: "gpt-image-1", prompt: "a cat" })).status).toBe(200);
  });

  it("20 concurrent transcriptions at 0.04 a minute (one minute reserved) on 0.10: exactly 2 served and sent", async () => {
    const { answers, sent } = await concurrent("/v1/audio/transcriptions", 0.1, () => ({ model: "whisper", file: "aGVsbG8=" }));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(2);
    expect(answers.filter((a) => a.status === 402 && a.json.error.code === "budget_exceeded")).toHaveLength(18);
    expect(sent).toBe(2);
  });

  it("20 concurrent quoted video generations at 0.42 on 1.00: exactly 2 started and sent; the refused quotes stay usable", async () => {
    const body = { model: "vid", prompt: "waves", seconds: 6 };
    const { k, answers, sent } = await concurrent("/v1/videos/generations", 1, () => undefined, async (secret) => {
      const quotes = [];
      for (let i = 0; i < 20; i++) {
        const q = await post("/v1/videos/quote", secret, body);
        expect(q.status).toBe(200);
        quotes.push({ ...body, quote_id: q.json.id, consent: true });
      }
      return quotes;
    });
    expect(answers.filter((a) => a.status === 202)).toHaveLength(2);
    const refused = answers.filter((a) => a.status !== 202);
    for (const a of refused) expect([a.status, a.json.error.code]).toEqual([402, "budget_exceeded"]);
    expect(sent).toBe(2);
    expect(await spent(k.id)).toBeCloseTo(0.84, 9);
  });
});
