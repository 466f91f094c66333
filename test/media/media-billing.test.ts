// Media calls as a user sees them: the status of an upstream failure, what a budgeted key is
// charged (video jobs that never started, transcriptions by their length, multipart uploads whose
// fields come after a large file), image job ids, and a video's content streamed past the
// provider's timeout. A loopback stand-in of its own plays the provider.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEnv, type Env } from "../gateway/fixtures";
import { until } from "../helpers/http";

const CRED = "media-billing-cred";

async function provider() {
  const seen: Array<{ path: string; body: Buffer }> = [];
  let slowClosed = false;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const path = req.url ?? "/";
      seen.push({ path, body });
      const json = (status: number, j: unknown) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(j));
      };
      if (req.headers.authorization !== `Bearer ${CRED}`) return json(401, { error: { message: "bad credential" } });
      const j = (req.headers["content-type"] ?? "").includes("json") ? JSON.parse(body.toString() || "{}") : {};
      if (path === "/v1/images/generations" || path === "/v1/images/edits") {
        if (j.model === "rejects-401") return json(401, { error: { message: "Incorrect API key provided" } });
        if (j.model === "rejects-403") return json(403, { error: { message: "this account may not use the model" } });
        if (j.model === "not-json") {
          res.writeHead(200, { "content-type": "application/json" });
          return res.end("<html>a proxy's error page</html>");
        }
        if (j.model === "slow") {
          req.socket.on("close", () => (slowClosed = true));
          return; // answers never: cancelled by the test
        }
        return json(200, { created: 1, data: [{ url: "http://images.example/1.png" }] });
      }
      if (path === "/v1/audio/transcriptions") return json(200, { task: "transcribe", language: "en", duration: 600, text: "ten minutes" });
      if (path === "/v1/videos/quote") return json(200, { quote_id: "uq", price_usd: 0.5 });
      if (path === "/v1/videos/generations") return j.prompt === "no id" ? json(200, { status: "queued" }) : json(200, { id: "up-7", status: "queued" });
      if (path === "/v1/videos/jobs/up-7/content") {
        // a large video: its bytes take longer to come than the provider's timeoutSeconds (1)
        res.writeHead(200, { "content-type": "video/mp4" });
        let i = 0;
        const tick = setInterval(() => {
          res.write(`part${i}.`);
          if (++i === 8) {
            clearInterval(tick);
            res.end();
          }
        }, 300);
        return;
      }
      json(404, { error: { message: `no route ${path}` } });
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    seen,
    slowClosed: () => slowClosed,
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

describe("media: statuses and charges", () => {
  let env: Env;
  let up: Awaited<ReturnType<typeof provider>>;

  beforeAll(async () => {
    env = await startEnv();
    up = await provider();
    process.env.SVC_TEST_MEDIA_BILLING_CRED = CRED;
    await env.apply([
      {
        kind: "Provider",
        name: "media-bill",
        spec: {
          type: "openai",
          baseUrl: up.baseUrl,
          credential: "env:SVC_TEST_MEDIA_BILLING_CRED",
          timeoutSeconds: 1,
          capabilities: ["image_generation", "image_edit", "transcription", "video"],
          models: [
            { name: "img", perImage: 0.04 },
            { name: "rejects-401", perImage: 0.04 },
            { name: "rejects-403", perImage: 0.04 },
            { name: "slow", perImage: 0.04 },
            { name: "not-json", perImage: 0.04 },
            { name: "whisper", perAudioMinute: 0.06 },
            { name: "vid", perVideoSecond: 0.1 },
          ],
        },
      },
    ]);
  }, 60_000);
  afterAll(async () => {
    await env?.stop();
    await up?.close();
    delete process.env.SVC_TEST_MEDIA_BILLING_CRED;
  });

  const post = async (path: string, secret: string | undefined, body: unknown, headers: Record<string, string> = {}) => {
    const r = await fetch(`${env.url}${path}`, { method: "POST", headers: { ...(secret ? { authorization: `Bearer ${secret}` } : {}), "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
    return { status: r.status, json: (await r.json()) as any };
  };
  const spent = async (id: string) => (await env.api("GET", `/v1/api-keys/${id}`)).json.usage.total.spend_usd as number;

  it("a provider refusing svc's own credential (401/403) is a 502 upstream_error, not the client's 401/403", async () => {
    const k = await env.key({});
    for (const model of ["rejects-401", "rejects-403"]) {
      const r = await post("/v1/images/generations", k.secret, { model, prompt: "x" });
      expect([r.status, r.json.error.code], model).toEqual([502, "upstream_error"]);
    }
    // an answer that says JSON and is not is the provider's failure too, not svc's 500
    const bad = await post("/v1/images/generations", k.secret, { model: "not-json", prompt: "x" });
    expect([bad.status, bad.json.error.code]).toEqual([502, "upstream_error"]);
  });

  it("a video generation whose provider started no job is not charged, and its quote cannot be charged twice", async () => {
    const k = await env.key({ budget_limits: { total: 5, currency: "USD" } });
    const body = { model: "vid", prompt: "no id", seconds: 5 };
    const q = await post("/v1/videos/quote", k.secret, body);
    expect(q.status).toBe(200);
    for (let i = 0; i < 2; i++) {
      const g = await post("/v1/videos/generations", k.secret, { ...body, quote_id: q.json.id, consent: true });
      expect([g.status, g.json.error?.code]).toEqual([502, "upstream_error"]);
    }
    expect(await spent(k.id)).toBe(0);
    // a job that starts is charged its quote, once
    const ok = { model: "vid", prompt: "waves", seconds: 5 };
    const q2 = await post("/v1/videos/quote", k.secret, ok);
    expect((await post("/v1/videos/generations", k.secret, { ...ok, quote_id: q2.json.id, consent: true })).status).toBe(202);
    expect(await spent(k.id)).toBeCloseTo(0.5, 9);
  });

  it("a transcription is charged by the length the answer reports (duration), not the one minute reserved", async () => {
    const k = await env.key({ budget_limits: { total: 5, currency: "USD" } });
    const r = await post("/v1/audio/transcriptions", k.secret, { model: "whisper", file: "aGVsbG8=", response_format: "verbose_json" });
    expect(r.status).toBe(200);
    expect(r.json.duration).toBe(600);
    // 600 s = 10 minutes at 0.06
    expect(await spent(k.id)).toBeCloseTo(0.6, 9);
  });

  it("a multipart upload whose model and n come after a file over 1 MiB is routed, judged and priced by them", async () => {
    const form = () => {
      const f = new FormData();
      f.append("image", new Blob([Buffer.alloc(1_500_000, 7)], { type: "image/png" }), "big.png");
      f.append("prompt", "a hat");
      f.append("model", "img");
      f.append("n", "3");
      return f;
    };
    const budgeted = await env.key({ budget_limits: { total: 5, currency: "USD" } });
    const r = await fetch(`${env.url}/v1/images/edits`, { method: "POST", headers: { authorization: `Bearer ${budgeted.secret}` }, body: form() });
    expect(r.status, await r.clone().text()).toBe(200);
    expect(await spent(budgeted.id)).toBeCloseTo(0.12, 9);
    // permissions.models applies to it as to a small upload
    const limited = await env.key({ permissions: { models: ["whisper*"] } });
    const denied = await fetch(`${env.url}/v1/images/edits`, { method: "POST", headers: { authorization: `Bearer ${limited.secret}` }, body: form() });
    expect(denied.status).toBe(403);
    expect(((await denied.json()) as any).error.param).toBe("model");
  });

  it("an image job named img_… in X-Svc-Job-Id is cancelled by that same id", async () => {
    const slow = fetch(`${env.url}/v1/images/generations`, { method: "POST", headers: { "content-type": "application/json", "x-svc-job-id": "img_mine-0001" }, body: JSON.stringify({ model: "slow", prompt: "x" }) });
    await until(() => up.seen.some((x) => x.body.toString().includes('"slow"')), 10_000);
    const c = await post("/v1/images/cancel", undefined, { id: "img_mine-0001" });
    expect(c.status).toBe(200);
    expect((await slow).status).toBe(409);
  });

  it("a video's content is streamed whole, even when it takes longer than the provider's timeoutSeconds", async () => {
    const k = await env.key({});
    const body = { model: "vid", prompt: "a long one", seconds: 5 };
    const q = await post("/v1/videos/quote", k.secret, body);
    const g = await post("/v1/videos/generations", k.secret, { ...body, quote_id: q.json.id, consent: true });
    expect(g.status).toBe(202);
    const content = await fetch(`${env.url}/v1/videos/jobs/${g.json.id}/content`, { headers: { authorization: `Bearer ${k.secret}` } });
    expect(content.status).toBe(200);
    const text = await content.text().catch((e) => `error: ${e?.cause?.message ?? e}`);
    expect(text).toBe("part0.part1.part2.part3.part4.part5.part6.part7.");
  }, 20_000);
});
