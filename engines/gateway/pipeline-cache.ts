// The pipeline's use of the response cache (engines/cache, docs/cache.md): what a request asks
// of it (Cache-Control, read in api/, and metadata.cache) and the probe made once the gate
// admitted the request, so a hit is judged by key, policy and limits like any call.
import type { ChatRequest, EmbeddingRequest } from "../chat/types";
import type { ResponseCache, Probe } from "../cache";
import type { CacheDirectives } from "../cache/types";
import type { RouteTarget } from "../providers/types";
import type { Caller } from "./pipeline-types";
import type { KeyEntry } from "./keys";
import type { Gate, Verdict } from "./gate";
import type { Limits } from "./limits";
import { costMicros } from "../providers/types";
import { reservationWritten } from "./pipeline-records";

/** The request's directives: Cache-Control, then a per-request opt-out in metadata
 * (`metadata.cache`: "no-store", "off" or false skip the cache; "no-cache" stores but never answers). */
export function cacheDirectives(caller: Caller, metadata: Record<string, unknown> | undefined): CacheDirectives | undefined {
  const m = metadata?.cache;
  if (m === undefined) return caller.cache;
  if (m === false || m === "no-store" || m === "off" || m === "false") return { ...caller.cache, noStore: true };
  if (m === "no-cache") return { ...caller.cache, noCache: true };
  return caller.cache;
}

/** Probe the cache for a chat request (undefined when the model declares no cache). */
export function probeChat(cache: ResponseCache | undefined, t: RouteTarget, caller: Caller, key: KeyEntry | null, req: ChatRequest, now: number): Probe | Promise<Probe> | undefined {
  if (!cache || !t.cache) return undefined;
  // A key with token_limits.per_request_max that sets no max_tokens is sent upstream with
  // max_tokens = per_request_max - prompt (pipeline.ts, the `out` request), an answer that may be
  // cut short: the cap is part of its key, so it neither answers nor is answered by the uncapped
  // request of another key of the scope. (The prompt is in the key, so the cap is determined.)
  const cap = key && key.role === "key" && req.maxTokens === undefined ? key.spec.token_limits?.per_request_max : undefined;
  return cache.probeChat(t.cache, cacheDirectives(caller, req.metadata), key, req, caller.requestId, now, cap);
}

export function probeEmbed(cache: ResponseCache | undefined, t: RouteTarget, caller: Caller, key: KeyEntry | null, req: EmbeddingRequest, now: number): Probe | Promise<Probe> | undefined {
  if (!cache || !t.cache) return undefined;
  return cache.probeEmbed(t.cache, cacheDirectives(caller, undefined), key, req, caller.requestId, now);
}

/** The audit metadata of a hit: `cache: hit` and the id of the request whose answer it replays. */
export function hitMetadata(meta: Record<string, unknown> | undefined, p: Probe): Record<string, unknown> {
  return { ...meta, cache: "hit", cache_request_id: p.entry!.requestId };
}

/** A hit costs nothing against budgets unless its model says `chargeHits`. */
export const freeHit = (p: Probe | undefined): boolean => p !== undefined && p.settings?.chargeHits !== true;

/** An embedding answered from the cache: settled and audited as chat's hits are (no upstream call). */
export async function embedHit(gate: Gate, limits: Limits, cache: ResponseCache, v: Verdict, t: RouteTarget, p: Probe, body: { vectors: number[][]; promptTokens: number }) {
  if (v.adm?.written) await reservationWritten(v.adm.written);
  const model = v.call.model!;
  const priceCost = costMicros(t, body.promptTokens, 0);
  const usd = limits.usd(priceCost, t.currency);
  cache.saved(model, usd);
  const free = freeHit(p);
  const cost = free ? 0 : v.key && v.adm ? gate.keyCost(v.key, t, priceCost, model) : priceCost;
  gate.finish(v, { status: "success", costMicros: cost, usdMicros: free ? 0 : usd, promptTokens: body.promptTokens, completionTokens: 0, metadata: hitMetadata(v.call.metadata, p) });
  return { vectors: body.vectors, promptTokens: body.promptTokens, provider: t.provider, model, rate: v.rate, cache: "hit" as const };
}
