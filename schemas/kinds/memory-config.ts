import { Type, type Static } from "@sinclair/typebox";
import { envelope } from "../common";

/** The spec's ranges. Values outside are clamped into range and fractions of whole-number fields
 * rounded, each with a warning (manifests/normalize); nothing is refused. */
export const memoryRanges = {
  memoryBudgetTokens: { default: 800, min: 100, max: 4000 },
  summaryDebounceSeconds: { default: 60, min: 10, max: 3600 },
  consolidationIntervalHours: { default: 24, min: 1, max: 168 },
  salienceFloor: { default: 0.2, min: 0, max: 1 },
  episodeRetentionDays: { default: 365, min: 0, max: 3650 },
} as const;

// No minimum/maximum, and Number rather than Integer, on purpose: out-of-range values are clamped
// and fractions rounded (a warning each), never refused.
export const MemoryConfigSpec = Type.Object(
  {
    enabled: Type.Boolean({ default: true }),
    memoryBudgetTokens: Type.Number({ default: 800, description: "100 to 4000; a whole number (a fraction is rounded)" }),
    summaryDebounceSeconds: Type.Number({ default: 60, description: "10 to 3600; a whole number (a fraction is rounded)" }),
    consolidationIntervalHours: Type.Number({ default: 24, description: "1 to 168; a whole number (a fraction is rounded)" }),
    salienceFloor: Type.Number({ default: 0.2, description: "0 to 1" }),
    episodeRetentionDays: Type.Number({ default: 365, description: "0 to 3650; a whole number (a fraction is rounded)" }),
    extractionModel: Type.Optional(
      Type.String({ minLength: 1, description: "Model of the distillation (extraction) call, as routed by the gateway. Default: the agent's defaultModel." }),
    ),
    embeddingModel: Type.Optional(
      Type.String({ minLength: 1, description: "Embedding model for hybrid recall (local GGUF or a provider's). Without one, recall is lexical only." }),
    ),
  },
  { additionalProperties: false },
);
export type MemoryConfigSpec = Static<typeof MemoryConfigSpec>;
export const MemoryConfig = envelope("MemoryConfig", MemoryConfigSpec, "Memory system settings (singleton); values are rounded and clamped into range, never refused.");
