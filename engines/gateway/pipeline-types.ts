// The contract between protocol routes (api/openai, api/anthropic, api/ollama) and the
// one enforcement pipeline every inference route goes through (engines/gateway/pipeline.ts).
import type { ChatEvent, ChatRequest, EmbeddingRequest, EmbeddingResult } from "../chat/types";
import type { Cancellation } from "../chat/cancel";
import type { KeyEntry } from "./keys";
import type { RateState } from "../errors";
import type { CacheDirectives, CacheState } from "../cache/types";
import type { Span } from "../telemetry";

/** Who is calling, as the HTTP layer saw it. */
export interface Caller {
  /** the raw key as sent (Authorization: Bearer/Token/Basic or x-api-key), if any */
  token?: string;
  ip: string;
  loopback: boolean;
  userAgent?: string;
  requestId: string;
  /** route path, for the audit log and the metrics' route label */
  route: string;
  /** the model call the route makes, named as the audit log names it (api/ sets it from its route
   * table; default chat.completions): a key refused before the body is read is audited under it */
  modelCall?: "chat.completions" | "embeddings";
  /** set once the caller was admitted (InferencePipeline.admit): its key, or null for anonymous
   * loopback; undefined until then (the pipeline then authenticates itself) */
  key?: KeyEntry | null;
  /** the wall clock (ms) read when the caller was admitted, taken once by the chat that follows */
  at?: number;
  /** set by an agent run or dispatch (engines/agents): the agent's model calls need this grant,
   * not the `inference` scope */
  grant?: "agents:run" | "agents:dispatch";
  /** Cache-Control of the request, for the response cache (engines/cache) */
  cache?: CacheDirectives;
  /** the span the request's calls are children of, while tracing is on (engines/telemetry) */
  trace?: Span;
}

export interface ChatStart {
  /** provider that serves the request (e.g. "local", "openai-main") */
  provider: string;
  /** model name as resolved */
  model: string;
  /** the key's rate window (api/ sends it as x-ratelimit-* headers) */
  rate?: RateState;
  /** events; iterating to the end settles cost/tokens and writes the audit entry.
   * Breaking out early (client went away) cancels upstream generation and settles what was used. */
  events: AsyncIterable<ChatEvent>;
  /** the response cache's verdict (x-svc-cache); undefined when the model is not cached */
  cache?: CacheState;
}

export interface ModelListing {
  id: string;
  provider: string;
  /** "local" for GGUF models served here */
  providerType: string;
  created: number;
}

export interface InferencePipeline {
  /** Authenticate the caller and check the key may be used from here (IP allowlist, role).
   * Returns the key, or null for anonymous loopback; throws 401/403. Routes call it before
   * reading the body and keep the result in Caller.key. */
  admit(caller: Caller): KeyEntry | null;
  /** Authenticate, authorize, limit, route, and start generation. Throws SvcError before
   * anything is sent when the request is refused. */
  chat(caller: Caller, req: ChatRequest, cancel: Cancellation): Promise<ChatStart>;
  embed(caller: Caller, req: EmbeddingRequest): Promise<EmbeddingResult & { provider: string; model: string; rate?: RateState; cache?: CacheState }>;
  /** Models the caller may use (all models on unauthenticated loopback). */
  listModels(caller: Caller): Promise<ModelListing[]>;
}
