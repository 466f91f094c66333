// Sampling resolution, four layers: the request's override, else the Model manifest's
// `sampling`, else the Server manifest's `generation` (the spec's "user settings"), else svc's
// built-in defaults. A value the client omitted stays undefined in ChatRequest.sampling, so it
// never masks a lower layer.
import type { ChatRequest } from "../chat/types";
import type { ModelSpec } from "../../schemas/kinds/model";
import type { Sampling } from "../../schemas/common";

/** Built-in defaults: llama.cpp's own (llama-server) defaults, so svc without any sampling
 * settings behaves like llama.cpp does. repeatPenalty 1 = off. */
export const BUILTIN_SAMPLING_DEFAULTS = {
  temperature: 0.8,
  topK: 40,
  topP: 0.95,
  minP: 0.05,
  repeatPenalty: 1,
  /** generous for chat, but bounded: a model that never emits an end token stops here */
  maxTokens: 512,
} as const;
/** Former name of BUILTIN_SAMPLING_DEFAULTS. */
export const SERVER_SAMPLING_DEFAULTS = BUILTIN_SAMPLING_DEFAULTS;

export type SamplingSource = "request" | "model" | "server" | "builtin" | "unset";
export const SAMPLING_PRECEDENCE: SamplingSource[] = ["request", "model", "server", "builtin"];
export const SAMPLING_KEYS = ["temperature", "topP", "topK", "minP", "repeatPenalty", "seed", "maxTokens", "stop"] as const;
export type SamplingKey = (typeof SAMPLING_KEYS)[number];

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

export function resolveSampling(
  req: Pick<ChatRequest, "sampling" | "maxTokens">,
  spec: Pick<ModelSpec, "sampling">,
  /** Server.spec.generation */
  server?: Sampling,
): ResolvedSampling {
  const r = req.sampling ?? {};
  const m = spec.sampling ?? {};
  const u = server ?? {};
  const d = BUILTIN_SAMPLING_DEFAULTS;
  return {
    temperature: r.temperature ?? m.temperature ?? u.temperature ?? d.temperature,
    topK: r.topK ?? m.topK ?? u.topK ?? d.topK,
    topP: r.topP ?? m.topP ?? u.topP ?? d.topP,
    minP: r.minP ?? m.minP ?? u.minP ?? d.minP,
    repeatPenalty: r.repeatPenalty ?? m.repeatPenalty ?? u.repeatPenalty ?? d.repeatPenalty,
    seed: r.seed ?? m.seed ?? u.seed,
    maxTokens: req.maxTokens ?? m.maxTokens ?? u.maxTokens ?? d.maxTokens,
    stop: (r.stop ?? []).filter((s) => s.length > 0),
  };
}

/** Each effective value with the layer it came from (the same precedence as resolveSampling). */
export function samplingSources(
  overrides: Partial<Record<SamplingKey, unknown>>,
  model: Sampling | undefined,
  server: Sampling | undefined,
): Record<SamplingKey, { value: unknown; source: SamplingSource }> {
  const layers: Array<[SamplingSource, Record<string, unknown>]> = [
    ["request", overrides],
    ["model", (model ?? {}) as Record<string, unknown>],
    ["server", (server ?? {}) as Record<string, unknown>],
    ["builtin", BUILTIN_SAMPLING_DEFAULTS as Record<string, unknown>],
  ];
  const out = {} as Record<SamplingKey, { value: unknown; source: SamplingSource }>;
  for (const k of SAMPLING_KEYS) {
    const hit = layers.find(([, l]) => l[k] !== undefined);
    out[k] = hit ? { value: hit[1][k], source: hit[0] } : { value: k === "stop" ? [] : null, source: "unset" };
  }
  return out;
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
