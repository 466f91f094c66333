// Sampling resolution: request override, else the Model manifest, else server defaults. A value
// the client omitted stays undefined in ChatRequest.sampling, so it never masks the manifest.
import type { ChatRequest } from "../chat/types";
import type { ModelSpec } from "../../schemas/kinds/model";

/** Server defaults: llama.cpp's own (llama-server) defaults, so a Model manifest without sampling
 * behaves like llama.cpp does. repeatPenalty 1 = off. */
export const SERVER_SAMPLING_DEFAULTS = {
  temperature: 0.8,
  topK: 40,
  topP: 0.95,
  minP: 0.05,
  repeatPenalty: 1,
  /** generous for chat, but bounded: a model that never emits an end token stops here */
  maxTokens: 512,
} as const;

export interface ResolvedSampling {
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  repeatPenalty: number;
  seed?: number;
  /** before capping by the context */
  maxTokens: number;
  stop: string[];
}

export function resolveSampling(req: Pick<ChatRequest, "sampling" | "maxTokens">, spec: Pick<ModelSpec, "sampling">): ResolvedSampling {
  const r = req.sampling ?? {};
  const m = spec.sampling ?? {};
  const d = SERVER_SAMPLING_DEFAULTS;
  return {
    temperature: r.temperature ?? m.temperature ?? d.temperature,
    topK: r.topK ?? m.topK ?? d.topK,
    topP: r.topP ?? m.topP ?? d.topP,
    minP: r.minP ?? m.minP ?? d.minP,
    repeatPenalty: r.repeatPenalty ?? m.repeatPenalty ?? d.repeatPenalty,
    seed: r.seed ?? m.seed,
    maxTokens: req.maxTokens ?? m.maxTokens ?? d.maxTokens,
    stop: (r.stop ?? []).filter((s) => s.length > 0),
  };
}

/** The subset of node-llama-cpp generation options sampling maps to. */
export function llamaSamplingOptions(s: ResolvedSampling) {
  return {
    temperature: s.temperature,
    topK: s.topK,
    topP: s.topP,
    minP: s.minP,
    ...(s.seed !== undefined ? { seed: s.seed } : {}),
    // `false` also skips node-llama-cpp's per-token penalty bookkeeping when the penalty is off
    repeatPenalty: s.repeatPenalty === 1 || s.repeatPenalty <= 0 ? (false as const) : { penalty: s.repeatPenalty },
    ...(s.stop.length ? { customStopTriggers: s.stop } : {}),
  };
}
