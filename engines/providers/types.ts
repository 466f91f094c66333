// What the router hands a provider adapter, and what an adapter does with it.
import type { Cancellation } from "../chat/cancel";
import type { ChatEvent, ChatRequest, EmbeddingRequest, EmbeddingResult } from "../chat/types";
import type { ProviderModelCache, ProviderSpec } from "../../schemas/kinds/provider";

/** "routed": the virtual target of a model served by several deployments (balancer.ts) */
export type ProviderType = ProviderSpec["type"] | "routed";

/** One (provider, model) pair able to serve a requested model name. */
export interface RouteTarget {
  /** Provider object name, or "local" for Model objects served by the local pool */
  provider: string;
  type: ProviderType;
  /** model name the client asked for */
  model: string;
  /** model name sent upstream */
  upstreamModel: string;
  /** micro-USD per million tokens; undefined when the model has no price */
  inPerM?: number;
  outPerM?: number;
  priced: boolean;
  /** ISO 4217 code of inPerM/outPerM and the media prices (Provider.spec.currency); undefined: USD */
  currency?: string;
  /** resolved connection settings (HTTP providers) */
  baseUrl?: string;
  credential?: string;
  headers?: Record<string, string>;
  timeoutMs: number;
  /** settings of the vendor types (azure-openai, bedrock, gemini, vertex) from the manifest */
  vendor?: VendorSettings;
  /** the model's response cache declaration (engines/cache), if any */
  cache?: ProviderModelCache;
}

/** What the vendor adapters read from their Provider manifest (schemas/kinds/provider.ts). */
export interface VendorSettings {
  /** azure-openai */
  apiVersion?: string;
  deployment?: string;
  auth?: "api-key" | "entra-id";
  /** bedrock region; vertex location */
  region?: string;
  project?: string;
  tokenUrl?: string;
}

export interface ProviderAdapter {
  /**
   * Start generation. Resolves once the upstream accepted the request (HTTP status known, first
   * event available), so a failure before any byte can fall back to the next target.
   * Throws SvcError (upstream_error 502, upstream_timeout 504, rate_limit_exceeded 429, …).
   */
  chat(t: RouteTarget, req: ChatRequest, cancel: Cancellation): Promise<AsyncIterable<ChatEvent>>;
  embed?(t: RouteTarget, req: EmbeddingRequest, cancel?: Cancellation): Promise<EmbeddingResult>;
}

/** Cost of a request in integer micro-USD (rounded up), given prices per million tokens in micro-USD. */
export function costMicros(t: Pick<RouteTarget, "inPerM" | "outPerM">, promptTokens: number, completionTokens: number): number {
  const v = promptTokens * (t.inPerM ?? 0) + completionTokens * (t.outPerM ?? 0);
  return v === 0 ? 0 : Math.ceil(v / 1e6);
}

/** Prefetch the first event so failures surface before the caller commits to a response. */
export async function primed(it: AsyncIterable<ChatEvent>): Promise<AsyncIterable<ChatEvent>> {
  const iter = it[Symbol.asyncIterator]();
  const first = await iter.next();
  let started = false;
  return {
    [Symbol.asyncIterator]() {
      return {
        next() {
          if (!started) {
            started = true;
            return Promise.resolve(first);
          }
          return iter.next();
        },
        return(v?: any) {
          started = true;
          return iter.return ? iter.return(v) : Promise.resolve({ done: true as const, value: v });
        },
      };
    },
  };
}
