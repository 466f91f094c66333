// The contract between protocol routes (api/openai, api/anthropic, api/ollama) and the
// one enforcement pipeline every inference route goes through (engines/gateway/pipeline.ts).
import type { ChatEvent, ChatRequest, EmbeddingRequest, EmbeddingResult } from "../chat/types";
import type { Cancellation } from "../chat/cancel";

/** Who is calling, as the HTTP layer saw it. */
export interface Caller {
  /** raw bearer token (Authorization: Bearer … or x-api-key), if any */
  token?: string;
  ip: string;
  loopback: boolean;
  userAgent?: string;
  requestId: string;
  /** route path, for the audit log */
  route: string;
}

export interface ChatStart {
  /** provider that serves the request (e.g. "local", "openai-main") */
  provider: string;
  /** model name as resolved */
  model: string;
  /** headers to add to the response (x-ratelimit-*, x-request-id) */
  headers: Record<string, string>;
  /** events; iterating to the end settles cost/tokens and writes the audit entry.
   * Breaking out early (client went away) cancels upstream generation and settles what was used. */
  events: AsyncIterable<ChatEvent>;
}

export interface ModelListing {
  id: string;
  provider: string;
  /** "local" for GGUF models served here */
  providerType: string;
  created: number;
}

export interface InferencePipeline {
  /** Authenticate, authorize, limit, route, and start generation. Throws GatewayError before
   * anything is sent when the request is refused. */
  chat(caller: Caller, req: ChatRequest, cancel: Cancellation): Promise<ChatStart>;
  embed(caller: Caller, req: EmbeddingRequest): Promise<EmbeddingResult & { provider: string; model: string; headers: Record<string, string> }>;
  /** Models the caller may use (all models on unauthenticated loopback). */
  listModels(caller: Caller): Promise<ModelListing[]>;
}
