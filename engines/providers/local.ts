// The local provider: GGUF models served by the inference pool (svc.engines.pool), reached
// through the same pipeline as any upstream. Local models cost 0 unless a Provider of type
// local gives them a price.
import type { ChatEvent, ChatRequest, EmbeddingRequest, EmbeddingResult } from "../chat/types";
import { SvcError } from "../errors";
import { hasImages, imagesRefused } from "../chat/images";
import { primed, type ProviderAdapter } from "./types";

/** What the gateway needs of engines/inference/pool.ts's ModelPool. */
export interface LocalPool {
  chat(req: ChatRequest, signal: AbortSignal): AsyncIterable<ChatEvent>;
  embed?(req: EmbeddingRequest, signal?: AbortSignal): Promise<EmbeddingResult>;
  has?(name: string): boolean;
  /** registered and its file is on disk */
  servable?(name: string): boolean;
  /** prompt tokens of a request with the model's own tokenizer, when the model is loaded */
  loadedChatTokens?(req: ChatRequest): Promise<number> | undefined;
  list?(): Array<{ name: string } | string> | Promise<Array<{ name: string } | string>>;
}

export function localAdapter(getPool: () => LocalPool | undefined): ProviderAdapter {
  const pool = () => {
    const p = getPool();
    if (!p) throw new SvcError("unavailable", "model_unavailable", "local inference is not available in this server");
    return p;
  };
  return {
    async chat(t, req, cancel) {
      // the GGUF models served here are text-only: an image is refused, never dropped
      if (hasImages(req)) throw imagesRefused(req.model, "a local GGUF text model");
      const r = t.upstreamModel === req.model ? req : { ...req, model: t.upstreamModel };
      return primed(pool().chat(r, cancel.signal));
    },
    async embed(t, req, cancel) {
      const p = pool();
      if (!p.embed) throw new SvcError("unavailable", "model_unavailable", "local embeddings are not available in this server");
      return p.embed(t.upstreamModel === req.model ? req : { ...req, model: t.upstreamModel }, cancel?.signal);
    },
  };
}
