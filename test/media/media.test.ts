// Media routes and the credit balance: honest 503 / 404 without a capable provider; forwarded
// with the official OpenAI SDK to a loopback stand-in that declares the capabilities; jobs in the
// store; cancel; the key's scope, models and audit apply.
import path from "node:path";
import { readFileSync } from "node:fs";
import OpenAI, { toFile } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";
import { postJson, until } from "../helpers/http";
import { mediaStandin } from "./standin";

const CRED = "upstream-secret-123";

describe("media routes", () => {
  let s: TestSvc;
  let up: Awaited<ReturnType<typeof mediaStandin>>;
  let admin: string;
  const mkKey = async (body: Record<string, unknown>) => (await postJson(`${s.url}/v1/api-keys`, { name: "media", ...body }, { authorization: `Bearer ${admin}` })).json;

  beforeAll(async () => {
    const home = await tempDir("svc-media-");
    s = await startTestSvc({ home });
    admin = readFileSync(path.join(home, "admin.key"), "utf8").trim();
    up = await mediaStandin(CRED);
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
    await up?.close();
    delete process.env.SVC_TEST_MEDIA_CRED;
  });

  it("says honestly what is missing when no provider offers a capability", async () => {
    const cases: Array<[string, string, unknown, string]> = [
      ["POST", "/v1/audio/transcriptions", { model: "whisper-1" }, "transcription"],
      ["POST", "/v1/images/generations", { model: "img", prompt: "a cat" }, "image_generation"],
      ["POST", "/v1/images/edits", { prompt: "x" }, "image_edit"],
      ["POST", "/v1/images/upscale", { prompt: "x" }, "image_upscale"],
      ["POST", "/v1/videos/quote", { prompt: "x" }, "video"],
      ["POST", "/v1/videos/generations", { prompt: "x" }, "video"],
    ];
    for (const [method, p, body, cap] of cases) {
      const r = await fetch(s.url + p, { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      expect(r.status, p).toBe(503);
      const j: any = await r.json();
      expect(j.error.code, p).toBe("model_unavailable");
      expect(j.error.message, p).toContain(`"${cap}"`);
    }
    const job = await fetch(`${s.url}/v1/videos/jobs/vid_nothing`);
    expect(job.status).toBe(404);
    const credits = await fetch(`${s.url}/credits/balance`);
    expect(credits.status).toBe(404);
    expect(((await credits.json()) as any).error).toMatchObject({ code: "not_configured" });
    const models = (await (await fetch(`${s.url}/v1/images/models`)).json()) as any;
    expect(models.data).toEqual([]);
    expect(models.message).toMatch(/image_generation/);
  });

  it("forwards to the capable provider with its credential (official SDK: transcription, images)", async () => {
    process.env.SVC_TEST_MEDIA_CRED = CRED;
    await s.svc.store.write([
      {
        op: "upsert",
        kind: "Provider",
        name: "media-up",
        owner: "config:test",
        spec: { type: "openai", baseUrl: up.baseUrl, credential: "env:SVC_TEST_MEDIA_CRED", capabilities: ["transcription", "image_generation", "image_edit", "image_upscale", "video", "credits"], models: [{ name: "whisper-1" }, { name: "img" }, { name: "slow-image" }, { name: "broken" }, { name: "vid" }] },
      },
    ]);
    const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: "none" });
    const tr = await client.audio.transcriptions.create({ file: await toFile(Buffer.from("RIFF....WAVE"), "a.wav"), model: "whisper-1" });
    expect(tr.text).toBe("hello from the stand-in");
    const seenTr = up.seen.find((x) => x.path === "/v1/audio/transcriptions")!;
    expect(seenTr.auth).toBe(`Bearer ${CRED}`);
    expect(seenTr.contentType).toMatch(/multipart\/form-data/);
    expect(seenTr.body.toString()).toContain("RIFF....WAVE");
    const img = await client.images.generate({ model: "img", prompt: "a cat" });
    expect(img.data?.[0].b64_json).toBe(Buffer.from("png").toString("base64"));
    const ed = await client.images.edit({ model: "img", image: await toFile(Buffer.from("PNG"), "in.png"), prompt: "hat" });
    expect(ed.data?.[0].url).toBe("http://images.example/edited.png");
    const upscale = await postJson(`${s.url}/v1/images/upscale`, { model: "img", image: "http://images.example/x.png" });
    expect(upscale.status).toBe(200);
    const listed = (await (await fetch(`${s.url}/v1/images/models`)).json()) as any;
    expect(listed.data.map((m: any) => m.id)).toContain("img");
    // an upstream failure is a 502 with the credential redacted
    const broken = await postJson(`${s.url}/v1/images/generations`, { model: "broken", prompt: "x" });
    expect(broken.status).toBe(502);
    expect(broken.text).not.toContain(CRED);
    // a model no capable provider lists
    const none = await postJson(`${s.url}/v1/audio/transcriptions`, { model: "other" });
    expect(none.status).toBe(503);
  });

  it("tracks image jobs in the store and cancels one in flight", async () => {
    const slow = fetch(`${s.url}/v1/images/generations`, { method: "POST", headers: { "content-type": "application/json", "x-svc-job-id": "job-slow-1" }, body: JSON.stringify({ model: "slow-image", prompt: "x" }) });
    await until(() => up.seen.some((x) => x.body.toString().includes("slow-image")), 10_000);
    const c = await postJson(`${s.url}/v1/images/cancel`, { id: "job-slow-1" });
    expect(c.status).toBe(200);
    expect(c.json).toMatchObject({ id: "img_job-slow-1", status: "cancelled" });
    const r = await slow;
    expect(r.status).toBe(409);
    await until(() => up.slowAborted(), 10_000);
    const row = await s.svc.db.prisma.mediaJob.findUnique({ where: { id: "img_job-slow-1" } });
    expect(row).toMatchObject({ kind: "image", provider: "media-up", status: "cancelled" });
    expect((await postJson(`${s.url}/v1/images/cancel`, { id: "job-slow-1" })).status).toBe(409);
    expect((await postJson(`${s.url}/v1/images/cancel`, { id: "job-unknown" })).status).toBe(404);
    const done = await s.svc.db.prisma.mediaJob.findMany({ where: { kind: "image", status: "completed" } });
    expect(done.length).toBeGreaterThanOrEqual(3);
  });

  it("quotes, starts, polls and fetches a video job, visible only to its key", async () => {
    const k = await mkKey({ scopes: ["inference"] });
    const h = { authorization: `Bearer ${k.api_key}` };
    const q = await postJson(`${s.url}/v1/videos/quote`, { model: "vid", prompt: "waves", seconds: 6 }, h);
    expect(q.status).toBe(200);
    expect(q.json).toMatchObject({ object: "video.quote", provider: "media-up", price_usd: 0.42, currency: "USD", upstream_quote_id: "q1", upstream: { seconds: 6 } });
    expect(q.json.id).toMatch(/^vq_/);
    expect(Date.parse(q.json.expires_at)).toBeGreaterThan(Date.now());
    const g = await postJson(`${s.url}/v1/videos/generations`, { model: "vid", prompt: "waves", seconds: 6, quote_id: q.json.id, consent: true }, h);
    expect(g.status).toBe(202);
    expect(g.json.id).toMatch(/^vid_/);
    expect(g.json).toMatchObject({ upstream_id: "up-1", status: "queued", poll_url: `/v1/videos/jobs/${g.json.id}` });
    expect(g.json.charge).toEqual({ quote_id: q.json.id, price_usd: 0.42, price_micros: "420000", currency: "USD" });
    // the provider got its own quote id with the generation
    expect(JSON.parse(up.seen.filter((x) => x.path === "/v1/videos/generations").at(-1)!.body.toString())).toEqual({ model: "vid", prompt: "waves", seconds: 6, quote_id: "q1", consent: true });
    expect(await s.svc.db.prisma.mediaJob.findUnique({ where: { id: g.json.id } })).toMatchObject({ quoteId: q.json.id, priceMicros: 420000n });
    const p1 = await fetch(`${s.url}/v1/videos/jobs/${g.json.id}`, { headers: h }).then((r) => r.json() as any);
    expect(p1.status).toBe("processing");
    const p2 = await fetch(`${s.url}/v1/videos/jobs/${g.json.id}`, { headers: h }).then((r) => r.json() as any);
    expect(p2).toMatchObject({ id: g.json.id, status: "completed", charge: { quote_id: q.json.id, price_usd: 0.42 } });
    expect((await s.svc.db.prisma.mediaJob.findUnique({ where: { id: g.json.id } }))?.status).toBe("completed");
    const content = await fetch(`${s.url}/v1/videos/jobs/${g.json.id}/content`, { headers: h });
    expect(content.headers.get("content-type")).toBe("video/mp4");
    expect(Buffer.from(await content.arrayBuffer()).toString()).toBe("MP4DATA");
    // another key, and anonymous loopback, do not see it
    const other = await mkKey({});
    expect((await fetch(`${s.url}/v1/videos/jobs/${g.json.id}`, { headers: { authorization: `Bearer ${other.api_key}` } })).status).toBe(404);
    expect((await fetch(`${s.url}/v1/videos/jobs/${g.json.id}`)).status).toBe(404);
    // the calls are in the key's audit log
    let actions: string[] = [];
    await until(() => {
      void fetch(`${s.url}/v1/audit-logs?limit=100`, { headers: { ...h, "x-api-key-id": k.id } })
        .then((r) => r.json() as any)
        .then((j) => (actions = (j.data ?? []).map((e: any) => e.action)));
      return actions.includes("media.videos.content");
    }, 10_000, 200);
    expect(actions).toEqual(expect.arrayContaining(["media.videos.quote", "media.videos.generations", "media.videos.job"]));
  });

  it("refuses a video generation without a valid quote and consent before anything goes upstream", async () => {
    const k = await mkKey({ scopes: ["inference"] });
    const h = { authorization: `Bearer ${k.api_key}` };
    const body = { model: "vid", prompt: "a lighthouse", seconds: 4 };
    const q = (await postJson(`${s.url}/v1/videos/quote`, body, h)).json;
    const other = await mkKey({ scopes: ["inference"] });
    const othersQuote = (await postJson(`${s.url}/v1/videos/quote`, body, { authorization: `Bearer ${other.api_key}` })).json;
    const expired = (await postJson(`${s.url}/v1/videos/quote`, body, h)).json;
    const row = (await s.svc.db.prisma.mediaJob.findUnique({ where: { id: expired.id } }))!;
    await s.svc.db.prisma.mediaJob.update({ where: { id: expired.id }, data: { result: JSON.stringify({ ...JSON.parse(row.result!), expiresAt: new Date(Date.now() - 1000).toISOString() }) } });
    const sentBefore = up.seen.filter((x) => x.path === "/v1/videos/generations").length;

    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [{ ...body, consent: true }, "quote_required", /quote_id is required/],
      [{ ...body, quote_id: q.id }, "consent_required", /consent must be true/],
      [{ ...body, quote_id: q.id, consent: "yes" }, "consent_required", /consent must be true/],
      [{ ...body, quote_id: "vq_nope", consent: true }, "quote_not_found", /does not exist/],
      [{ ...body, quote_id: othersQuote.id, consent: true }, "quote_not_found", /does not exist/],
      [{ ...body, quote_id: expired.id, consent: true }, "quote_expired", /expired at/],
      [{ ...body, seconds: 8, quote_id: q.id, consent: true }, "quote_mismatch", /fields: seconds/],
    ];
    for (const [b, code, message] of cases) {
      const r = await postJson(`${s.url}/v1/videos/generations`, b, h);
      expect([r.status, r.json.error?.code]).toEqual([400, code]);
      expect(r.json.error.message).toMatch(message);
    }
    // the loopback upstream saw none of them
    expect(up.seen.filter((x) => x.path === "/v1/videos/generations").length).toBe(sentBefore);

    // the quote still works once, then it is used
    const ok = await postJson(`${s.url}/v1/videos/generations`, { ...body, quote_id: q.id, consent: true }, h);
    expect(ok.status).toBe(202);
    expect(ok.json.charge).toMatchObject({ quote_id: q.id, price_usd: 0.42 });
    const again = await postJson(`${s.url}/v1/videos/generations`, { ...body, quote_id: q.id, consent: true }, h);
    expect([again.status, again.json.error?.code]).toEqual([400, "quote_used"]);
    expect(up.seen.filter((x) => x.path === "/v1/videos/generations").length).toBe(sentBefore + 1);
  });

  it("applies the key: inference scope, permissions.models, and no budgeted keys", async () => {
    const tools = await mkKey({ scopes: ["tools"] });
    for (const p of ["/v1/images/generations", "/v1/audio/transcriptions", "/v1/videos/quote"]) {
      const r = await postJson(s.url + p, { model: "img", prompt: "x" }, { authorization: `Bearer ${tools.api_key}` });
      expect(r.status, p).toBe(403);
      expect(r.json.error.message).toContain('"inference" scope');
    }
    const cr = await fetch(`${s.url}/credits/balance`, { headers: { authorization: `Bearer ${tools.api_key}` } });
    expect(cr.status).toBe(403);
    const limited = await mkKey({ permissions: { models: ["whisper-*"] } });
    const r = await postJson(`${s.url}/v1/images/generations`, { model: "img", prompt: "x" }, { authorization: `Bearer ${limited.api_key}` });
    expect(r.status).toBe(403);
    expect(r.json.error.param).toBe("model");
    const budgeted = await mkKey({ budget_limits: { monthly: 5 } });
    const b = await postJson(`${s.url}/v1/images/generations`, { model: "img", prompt: "x" }, { authorization: `Bearer ${budgeted.api_key}` });
    expect(b.status).toBe(403);
    expect(b.json.error.message).toMatch(/budget/);
  });

  it("reports the credit balance of a provider that declares credits", async () => {
    const r = await fetch(`${s.url}/credits/balance`);
    expect(r.status).toBe(200);
    expect(await r.json()).toMatchObject({ provider: "media-up", balance: 7.5, total_credits: 10, total_usage: 2.5, currency: "USD" });
  });
});
