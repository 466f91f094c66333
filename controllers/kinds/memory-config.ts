// MemoryConfig (singleton): the memory engine reads the effective settings from the store on
// every use, so reconcile only re-arms the consolidation interval and reports what is in force:
// the clamped values and whether recall is hybrid (embeddingModel) or lexical only.
import type { KindController } from "../types";
import type { MemoryEngine } from "../../engines/memory/engine";

export function memoryConfigController(memory: MemoryEngine): KindController<"MemoryConfig"> {
  return {
    kind: "MemoryConfig",
    async reconcile() {
      const s = memory.configure();
      const recall = s.embeddingModel ? `hybrid recall (lexical + embeddings from ${s.embeddingModel})` : "lexical recall only (no embeddingModel set)";
      const extraction = s.extractionModel ? `extraction model ${s.extractionModel}` : "extraction with each agent's defaultModel";
      return {
        status: "True",
        reason: s.enabled ? "Active" : "Disabled",
        message: (s.enabled ? `${recall}; ${extraction}` : "memory is disabled (spec.enabled: false): turns are not buffered") + s.warnings.map((w) => `; warning: ${w}`).join(""),
        extra: {
          effective: {
            memoryBudgetTokens: s.memoryBudgetTokens,
            summaryDebounceSeconds: s.summaryDebounceSeconds,
            consolidationIntervalHours: s.consolidationIntervalHours,
            salienceFloor: s.salienceFloor,
            episodeRetentionDays: s.episodeRetentionDays,
          },
          recall: s.embeddingModel ? "hybrid" : "lexical",
          warnings: s.warnings,
        },
      };
    },
    async finalize() {
      memory.configure(); // back to defaults
    },
  };
}
