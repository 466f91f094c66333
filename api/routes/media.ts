// Media routes (spec/local-server.md "Media") and the credit balance, forwarded to Providers that
// declare the capability (Provider.spec.capabilities); paths are appended to the provider's
// baseUrl (…/v1). Without a capable provider: 503 model_unavailable naming what to configure
// (/credits/balance: 404 not_configured). Every call passes the gate (api/media-access.ts):
// key use, permissions and policy (action media:<operation>), limits and prices, audit.
//   POST /v1/audio/transcriptions           multipart or JSON, passed through   (transcription)
//   GET  /v1/images/models                  models of image-capable providers
//   POST /v1/images/generations|edits|upscale  a tracked image job; X-Svc-Job-Id names it
//                                           (sent by the client to cancel it later, or made up)
//   POST /v1/images/cancel {id}             abort an image job in flight
//   POST /v1/videos/quote                   the provider's price as an svc quote {id: vq_…, price_usd,
//                                           expires_at} bound to this key and request  (video)
//   POST /v1/videos/generations             {…the quoted request, quote_id, consent: true}: start a job
//                                           -> {id: vid_…, status, poll_url, charge}; refused (400)
//                                           before anything goes upstream without a valid quote
//   GET  /v1/videos/jobs/{id}               refresh and show the job
//   GET  /v1/videos/jobs/{id}/content       the finished media, streamed
//   GET  /credits/balance                   balance of a provider declaring "credits"
import Router from "@koa/router";
import { Readable } from "node:stream";
import type { Context } from "koa";
import type { Svc } from "../../engines/svc";
import { SvcError, invalidRequest } from "../../engines/errors";
import { capableProviders, type MediaCapability } from "../../engines/media";
import { newJobId } from "../../engines/media/jobs";
import { paramsOf, quotedCharge } from "../../engines/media/quotes";
import { readRaw } from "../body";
import { jsonBody } from "../body-schema";
import { JobIdBody, VideoBody } from "../../schemas/api/media";
import { admitMedia, callMedia, countOf, mayView, mediaOf, modelOf } from "../media-access";

const IMAGE_OPS: Record<string, MediaCapability> = { generations: "image_generation", edits: "image_edit", upscale: "image_upscale" };
const JOB_ID = /^[A-Za-z0-9_-]{8,100}$/;
const readCancel = jsonBody("post", "/v1/images/cancel", JobIdBody);
const readVideo = { quote: jsonBody("post", "/v1/videos/quote", VideoBody), generations: jsonBody("post", "/v1/videos/generations", VideoBody) };

const codeOf = (e: unknown) => (e instanceof SvcError ? e.code : "internal_error");

/** Does a Provider model serve a media capability? Its own `capabilities` say so; else the media
 * prices it carries (a transcription or video model is not an image model); else it may serve
 * any of the Provider's. */
function modelServes(m: { capabilities?: string[]; perImage?: number; perAudioMinute?: number; perVideoSecond?: number }, cap: string): boolean {
  if (m.capabilities) return m.capabilities.includes(cap);
  const priced = [m.perImage !== undefined && "image", m.perAudioMinute !== undefined && "transcription", m.perVideoSecond !== undefined && "video"].filter(Boolean);
  if (!priced.length) return true;
  return priced.includes(cap.startsWith("image_") ? "image" : cap);
}

function passThrough(ctx: Context, up: { contentType: string; json?: any; body: any }) {
  ctx.type = up.contentType;
  ctx.body = up.json !== undefined ? up.json : up.body ? Readable.fromWeb(up.body) : "";
}

export default function media(svc: Svc): Router {
  const r = new Router();

  r.post("/v1/audio/transcriptions", async (ctx) => {
    const m = mediaOf(svc);
    const c = admitMedia(svc, ctx, "media.transcription");
    const raw = await readRaw(ctx, (ctx.state as any).bodyLimit);
    const type = ctx.get("content-type") || "application/octet-stream";
    const model = modelOf(raw, type);
    // a minute is reserved; the answer's `duration` (verbose_json, seconds) settles the actual length
    const op = {
      audit: "media.transcription",
      model,
      candidates: m.candidates("transcription", model),
      metered: true,
      price: { unit: "perAudioMinute" as const, quantity: 1 },
      actualQuantity: (up: { json?: any }) => {
        const d = up.json?.duration;
        return typeof d === "number" && Number.isFinite(d) && d >= 0 ? d / 60 : undefined;
      },
    };
    const up = await callMedia(svc, ctx, c, op, (t) => m.forward(t, "POST", "/audio/transcriptions", { body: raw, contentType: type }));
    passThrough(ctx, up);
  });

  r.get("/v1/images/models", (ctx) => {
    admitMedia(svc, ctx, "media.images.models");
    const data: Array<{ id: string; object: string; provider: string; capabilities: string[] }> = [];
    const providers = new Map<string, string[]>();
    for (const cap of ["image_generation", "image_edit", "image_upscale"] as const) {
      for (const p of capableProviders(svc.store, cap)) providers.set(p.name, [...(providers.get(p.name) ?? []), cap]);
    }
    for (const [name, caps] of providers) {
      const spec = capableProviders(svc.store, caps[0] as MediaCapability).find((p) => p.name === name)!.spec;
      for (const mdl of spec.models ?? []) {
        const served = caps.filter((c) => modelServes(mdl, c));
        if (served.length) data.push({ id: mdl.name, object: "model", provider: name, capabilities: served });
      }
    }
    ctx.body = {
      object: "list",
      data,
      providers: [...providers].map(([name, caps]) => ({ name, capabilities: caps })),
      ...(providers.size ? {} : { message: 'no image provider is configured: add a Provider whose spec.capabilities lists "image_generation" (svc has no local image models)' }),
    };
  });

  for (const [op, cap] of Object.entries(IMAGE_OPS)) {
    r.post(`/v1/images/${op}`, async (ctx) => {
      const m = mediaOf(svc);
      const c = admitMedia(svc, ctx, `media.images.${op}`);
      const wanted = ctx.get("x-svc-job-id").trim();
      if (wanted && !JOB_ID.test(wanted)) throw invalidRequest("X-Svc-Job-Id must be 8 to 100 characters of [A-Za-z0-9_-]", "X-Svc-Job-Id");
      const raw = await readRaw(ctx, (ctx.state as any).bodyLimit);
      const type = ctx.get("content-type") || "application/json";
      const model = modelOf(raw, type);
      const candidates = m.candidates(cap, model);
      // an id the client already prefixed is kept as sent, so cancel finds it by that same id
      // (prefixed again, img_x was stored as img_img_x and cancel {id: "img_x"} was a 404)
      const id = wanted ? (wanted.startsWith("img_") ? wanted : `img_${wanted}`) : newJobId("img_");
      if (await m.jobs.get(id)) throw new SvcError("conflict", "conflict", `image job ${id} already exists; send another X-Svc-Job-Id`, "X-Svc-Job-Id");
      const price = { unit: "perImage" as const, quantity: countOf(raw, type) };
      // the job is recorded (and cancellable) once the gate admitted the call
      let abort: AbortController | undefined;
      try {
        const up = await callMedia(svc, ctx, c, { audit: `media.images.${op}`, model, candidates, metered: true, price, jobId: id }, async (t) => {
          await m.jobs.create({ id, kind: "image", operation: op, provider: t.provider, model, status: "running", ownerKeyId: c.key?.id ?? null });
          abort = m.jobs.track(id);
          ctx.set("x-svc-job-id", id);
          return m.forward(t, "POST", `/images/${op}`, { body: raw, contentType: type, signal: abort.signal });
        });
        await m.jobs.update(id, { status: "completed", result: { created: up.json?.created, count: Array.isArray(up.json?.data) ? up.json.data.length : undefined } });
        passThrough(ctx, up);
      } catch (e) {
        if (!abort) throw e; // refused at the gate: no job was made
        if (abort.signal.aborted) throw new SvcError("conflict", "conflict", `image job ${id} was cancelled`);
        await m.jobs.update(id, { status: "failed", error: codeOf(e) });
        throw e;
      } finally {
        if (abort) m.jobs.untrack(id);
      }
    });
  }

  r.post("/v1/images/cancel", async (ctx) => {
    const m = mediaOf(svc);
    const c = admitMedia(svc, ctx, "media.images.cancel");
    const b = await readCancel(ctx);
    const id = b.id.startsWith("img_") ? b.id : `img_${b.id}`;
    const job = await m.jobs.get(id);
    if (!job || job.kind !== "image" || !mayView(c, job.ownerKeyId)) throw new SvcError("not_found", "not_found", `image job ${JSON.stringify(b.id)} does not exist`);
    if (job.status !== "running") throw new SvcError("conflict", "conflict", `image job ${id} is already ${job.status}`);
    await callMedia(svc, ctx, c, { audit: "media.images.cancel", model: job.model ?? undefined, provider: job.provider, metered: false, jobId: id }, async () => {
      if (!(await m.jobs.cancel(id))) throw new SvcError("conflict", "conflict", `image job ${id} is not running in this process`);
    });
    ctx.body = { id, object: "image.job", status: "cancelled" };
  });

  r.post("/v1/videos/quote", async (ctx) => {
    const { m, c, b, model, candidates } = await videoCall(svc, ctx, "media.videos.quote");
    const { t, up } = await callMedia(svc, ctx, c, { audit: "media.videos.quote", model, candidates, metered: true }, async (t) => ({
      t,
      up: await m.forward(t, "POST", "/videos/quote", { body: JSON.stringify(paramsOf(b)), contentType: "application/json" }),
    }));
    const quote = await m.quotes.issue({ provider: t.provider, model, ownerKeyId: c.key?.id ?? null, body: b, up: up.json });
    ctx.body = { ...quote, upstream: up.json ?? null };
  });

  r.post("/v1/videos/generations", async (ctx) => {
    const { m, c, b, model, candidates } = await videoCall(svc, ctx, "media.videos.generations");
    // the gate first (key, policy, limits), reserving the quoted price: the key is charged the
    // quote, whatever the provider's per-second price says; then the quote and consent are
    // checked and the quote claimed, all before anything is sent upstream
    const id = newJobId("vid_");
    const spendMicros = (await m.quotes.priceOf(b.quote_id, c.key?.id ?? null)) ?? 0;
    const { t, quote, up } = await callMedia(svc, ctx, c, { audit: "media.videos.generations", model, candidates, metered: true, spendMicros, jobId: id }, async (t) => {
      const quote = await m.quotes.claim(b, { ownerKeyId: c.key?.id ?? null, provider: t.provider, model });
      const fwd = { ...paramsOf(b), ...(quote.upstream_quote_id ? { quote_id: quote.upstream_quote_id } : {}), consent: true };
      try {
        const up = await m.forward(t, "POST", "/videos/generations", { body: JSON.stringify(fwd), contentType: "application/json" });
        // an answer without a job id started nothing: fail inside the gate's call, so the key is
        // not charged (checked after the call, the quote was charged and released for another charge)
        if (typeof up.json?.id !== "string" || !up.json.id) throw new SvcError("upstream", "upstream_error", `provider ${t.provider} started no job (its answer has no id)`);
        return { t, quote, up };
      } catch (e) {
        await m.quotes.release(quote.id); // nothing started: the quote stays usable until it expires
        throw e;
      }
    });
    const priceMicros = BigInt(Math.round(quote.price_usd * 1e6));
    const upstreamId: string = up.json.id;
    const status = typeof up.json.status === "string" ? up.json.status : "queued";
    await m.jobs.create({ id, kind: "video", operation: "video", provider: t.provider, model, upstreamId, status, ownerKeyId: c.key?.id ?? null, result: up.json, quoteId: quote.id, priceMicros });
    await m.quotes.usedBy(quote.id, id);
    ctx.status = 202;
    ctx.set("location", `/v1/videos/jobs/${id}`);
    ctx.body = { ...up.json, id, object: "video.job", upstream_id: upstreamId, provider: t.provider, status, poll_url: `/v1/videos/jobs/${id}`, charge: quotedCharge({ quoteId: quote.id, priceMicros }) };
  });

  const videoJob = async (ctx: Context, audit: string) => {
    const m = mediaOf(svc);
    const c = admitMedia(svc, ctx, audit);
    const job = await m.jobs.get(ctx.params.id);
    if (!job || job.kind !== "video" || !mayView(c, job.ownerKeyId)) throw new SvcError("not_found", "not_found", `video job ${JSON.stringify(ctx.params.id)} does not exist`);
    const t = m.targetOf(job.provider, "video");
    /** one call through the gate to the job's provider */
    const forward = (path: string, stream?: boolean) => callMedia(svc, ctx, c, { audit, model: job.model ?? undefined, provider: t.provider, metered: false, jobId: job.id }, () => m.forward(t, "GET", path, stream ? { stream } : undefined));
    return { m, job, forward };
  };

  r.get("/v1/videos/jobs/:id", async (ctx) => {
    const { m, job, forward } = await videoJob(ctx, "media.videos.job");
    const up = await forward(`/videos/jobs/${encodeURIComponent(job.upstreamId!)}`);
    const status = typeof up.json?.status === "string" ? up.json.status : job.status;
    await m.jobs.update(job.id, { status, result: up.json });
    ctx.body = { ...(up.json ?? {}), id: job.id, object: "video.job", upstream_id: job.upstreamId, provider: job.provider, status, created_at: job.createdAt.toISOString(), charge: quotedCharge(job) };
  });

  r.get("/v1/videos/jobs/:id/content", async (ctx) => {
    const { job, forward } = await videoJob(ctx, "media.videos.content");
    const up = await forward(`/videos/jobs/${encodeURIComponent(job.upstreamId!)}/content`, true);
    passThrough(ctx, up);
  });

  r.get("/credits/balance", async (ctx) => {
    const m = mediaOf(svc);
    const c = admitMedia(svc, ctx, "credits.balance");
    const providers = capableProviders(svc.store, "credits");
    if (!providers.length) {
      throw new SvcError("not_found", "not_configured", 'no provider reports a credit balance: add "credits" to spec.capabilities of a Provider whose service has one (svc asks GET <baseUrl>/credits)');
    }
    const want = typeof ctx.query.provider === "string" ? ctx.query.provider : undefined;
    const { t, up } = await callMedia(svc, ctx, c, { audit: "credits.balance", candidates: m.candidates("credits", undefined, want), metered: false }, async (t) => ({ t, up: await m.forward(t, "GET", "/credits") }));
    const j = up.json ?? {};
    // OpenRouter-style {data: {total_credits, total_usage}}, or a plain {balance}
    const d = j.data ?? j;
    const total = typeof d.total_credits === "number" ? d.total_credits : undefined;
    const used = typeof d.total_usage === "number" ? d.total_usage : undefined;
    const balance = typeof d.balance === "number" ? d.balance : total !== undefined ? total - (used ?? 0) : undefined;
    if (balance === undefined) throw new SvcError("upstream", "upstream_error", `provider ${t.provider} answered /credits without a balance`);
    ctx.body = { object: "credits.balance", provider: t.provider, balance, total_credits: total ?? null, total_usage: used ?? null, currency: typeof d.currency === "string" ? d.currency : "USD" };
  });

  return r;
}

/** A video request admitted: its key checked, its JSON body read, its model routed. */
async function videoCall(svc: Svc, ctx: Context, audit: string) {
  const m = mediaOf(svc);
  const c = admitMedia(svc, ctx, audit);
  const b = await (ctx.path.endsWith("/quote") ? readVideo.quote : readVideo.generations)(ctx);
  const model = b.model;
  return { m, c, b, model, candidates: m.candidates("video", model) };
}
