// Quoted video jobs. POST /v1/videos/quote asks the provider for a price and issues an svc quote
// (id vq_…, price, expiry) bound to the key and to the exact request it priced; a generation must
// name that quote and carry `consent: true`. Every refusal happens here, before anything is sent
// upstream. A quote pays for one job: it is claimed atomically before the upstream call and given
// back if that call fails. The quoted price is recorded on the job (priceMicros): it is what the
// key is charged (the gate settles media cost from it).
// Quotes are MediaJob rows of kind "video_quote" (status open | used), so they survive a restart.
import { createHash, randomBytes } from "node:crypto";
import type { PrismaClient } from "../../prisma/client";
import { SvcError, type ErrorCode } from "../errors";

/** How long a quote holds when the provider names no expiry, and the longest svc honours. */
export const QUOTE_TTL_MS = 15 * 60_000;
/** Fields of a generation body that are about the quote, not the video. */
const QUOTE_FIELDS = new Set(["quote_id", "consent"]);

export interface VideoQuote {
  id: string;
  object: "video.quote";
  provider: string;
  model: string | null;
  price_usd: number;
  currency: "USD";
  expires_at: string;
  /** the provider's own quote id, sent upstream with the generation */
  upstream_quote_id: string | null;
}

/** The price of a provider's quote answer, in USD (price_usd, price, cost or amount). */
export function upstreamPrice(j: any): number | undefined {
  for (const k of ["price_usd", "price", "cost_usd", "cost", "amount"]) {
    const v = j?.[k];
    if (typeof v === "number" && Number.isFinite(v) && v >= 0) return v;
    if (typeof v === "string" && /^\d+(\.\d+)?$/.test(v)) return Number(v);
  }
  return undefined;
}

/** The parameters a quote priced: the body without quote fields, keys sorted, as one string. */
export function paramsOf(body: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(body).sort()) if (!QUOTE_FIELDS.has(k)) out[k] = body[k];
  return out;
}
const digest = (p: Record<string, unknown>) => createHash("sha256").update(JSON.stringify(p)).digest("hex");

const refuse = (code: ErrorCode, message: string, param = "quote_id") => new SvcError("invalid", code, message, param);

interface QuoteResult {
  params: Record<string, unknown>;
  digest: string;
  expiresAt: string;
  jobId?: string;
}

export class VideoQuotes {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Record a quote for `body` priced by the provider's answer `up`. */
  async issue(q: { provider: string; model?: string; ownerKeyId: string | null; body: Record<string, unknown>; up: any }): Promise<VideoQuote> {
    const price = upstreamPrice(q.up);
    if (price === undefined) throw new SvcError("upstream", "upstream_error", `provider ${q.provider} answered the quote without a price (price_usd, price or cost)`);
    const now = this.now();
    const upExpiry = typeof q.up?.expires_at === "string" ? Date.parse(q.up.expires_at) : typeof q.up?.expires_at === "number" ? q.up.expires_at * 1000 : NaN;
    const expires = new Date(Math.min(now.getTime() + QUOTE_TTL_MS, Number.isFinite(upExpiry) ? upExpiry : Infinity));
    const upstreamQuoteId = typeof q.up?.quote_id === "string" ? q.up.quote_id : typeof q.up?.id === "string" ? q.up.id : null;
    const params = paramsOf(q.body);
    const id = "vq_" + randomBytes(12).toString("base64url");
    const result: QuoteResult = { params, digest: digest(params), expiresAt: expires.toISOString() };
    await this.prisma.mediaJob.create({
      data: {
        id,
        kind: "video_quote",
        operation: "quote",
        provider: q.provider,
        model: q.model ?? null,
        upstreamId: upstreamQuoteId,
        status: "open",
        ownerKeyId: q.ownerKeyId,
        result: JSON.stringify(result),
        priceMicros: BigInt(Math.round(price * 1e6)),
        createdAt: now,
        updatedAt: now,
      },
    });
    return { id, object: "video.quote", provider: q.provider, model: q.model ?? null, price_usd: price, currency: "USD", expires_at: result.expiresAt, upstream_quote_id: upstreamQuoteId };
  }

  /** The price (micro-USD) of this key's open quote `qid`, for the gate to reserve before the
   * quote is checked and claimed; undefined for anything else (claim() then says what is wrong). */
  async priceOf(qid: unknown, ownerKeyId: string | null): Promise<number | undefined> {
    if (typeof qid !== "string" || qid === "") return undefined;
    const row = await this.prisma.mediaJob.findUnique({ where: { id: qid } });
    if (!row || row.kind !== "video_quote" || row.status !== "open" || (row.ownerKeyId ?? null) !== (ownerKeyId ?? null)) return undefined;
    return Number(row.priceMicros ?? 0n);
  }

  /**
   * Check a generation body against its quote and claim the quote. Throws 400 with code
   * quote_required | consent_required | quote_not_found | quote_expired | quote_used |
   * quote_mismatch. Returns the claimed quote; call release() if the upstream call fails.
   */
  async claim(body: Record<string, unknown>, c: { ownerKeyId: string | null; provider: string; model?: string }): Promise<VideoQuote> {
    const qid = body.quote_id;
    if (typeof qid !== "string" || qid === "") throw refuse("quote_required", "quote_id is required: get a quote from POST /v1/videos/quote for the same request, then send its id with consent: true");
    if (body.consent !== true) throw refuse("consent_required", `consent must be true: it confirms the quoted price of ${qid} will be charged`, "consent");
    const row = await this.prisma.mediaJob.findUnique({ where: { id: qid } });
    // another key's quote is "not found", so quote ids cannot be probed
    if (!row || row.kind !== "video_quote" || (row.ownerKeyId ?? null) !== (c.ownerKeyId ?? null)) throw refuse("quote_not_found", `quote ${JSON.stringify(qid)} does not exist for this key`);
    const r = JSON.parse(row.result ?? "{}") as QuoteResult;
    if (row.status !== "open") throw refuse("quote_used", `quote ${qid} was already used for job ${r.jobId ?? "(another)"}; get a new quote`);
    if (Date.parse(r.expiresAt) <= this.now().getTime()) throw refuse("quote_expired", `quote ${qid} expired at ${r.expiresAt}; get a new quote`);
    const params = paramsOf(body);
    if (row.provider !== c.provider || digest(params) !== r.digest) {
      const keys = new Set([...Object.keys(params), ...Object.keys(r.params)]);
      const differ = [...keys].filter((k) => JSON.stringify(params[k]) !== JSON.stringify(r.params[k]));
      throw refuse("quote_mismatch", `the request differs from what quote ${qid} priced (${differ.length ? `fields: ${differ.join(", ")}` : `provider ${c.provider} instead of ${row.provider}`}); get a quote for this request`);
    }
    // atomic: only one generation wins an open quote
    const won = await this.prisma.mediaJob.updateMany({ where: { id: qid, status: "open" }, data: { status: "used", updatedAt: this.now() } });
    if (won.count !== 1) throw refuse("quote_used", `quote ${qid} was already used; get a new quote`);
    return this.view(row, r);
  }

  /** The upstream call failed: the quote may be used again (until it expires). */
  async release(qid: string): Promise<void> {
    await this.prisma.mediaJob.updateMany({ where: { id: qid, status: "used" }, data: { status: "open", updatedAt: this.now() } });
  }

  /** Note which job a used quote paid for. */
  async usedBy(qid: string, jobId: string): Promise<void> {
    const row = await this.prisma.mediaJob.findUnique({ where: { id: qid } });
    if (!row) return;
    const r = JSON.parse(row.result ?? "{}") as QuoteResult;
    await this.prisma.mediaJob.update({ where: { id: qid }, data: { result: JSON.stringify({ ...r, jobId }), updatedAt: this.now() } });
  }

  private view(row: { id: string; provider: string; model: string | null; upstreamId: string | null; priceMicros: bigint | null }, r: QuoteResult): VideoQuote {
    return {
      id: row.id,
      object: "video.quote",
      provider: row.provider,
      model: row.model,
      price_usd: Number(row.priceMicros ?? 0n) / 1e6,
      currency: "USD",
      expires_at: r.expiresAt,
      upstream_quote_id: row.upstreamId,
    };
  }
}

/** What a video job was charged: its quote and price (null for jobs from before quotes). */
export function quotedCharge(job: { quoteId?: string | null; priceMicros?: bigint | null }): { quote_id: string; price_usd: number; price_micros: string; currency: "USD" } | null {
  if (!job.quoteId || job.priceMicros === null || job.priceMicros === undefined) return null;
  return { quote_id: job.quoteId, price_usd: Number(job.priceMicros) / 1e6, price_micros: job.priceMicros.toString(), currency: "USD" };
}
