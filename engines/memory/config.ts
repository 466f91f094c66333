// The effective memory settings: the MemoryConfig singleton (values clamped into the spec's
// ranges, as manifests/normalize.ts does on apply) or the defaults when there is none.
import type { ResourceStore } from "../../prisma/resource-store";
import { memoryRanges, type MemoryConfigSpec } from "../../schemas/kinds/memory-config";

export interface MemorySettings {
  enabled: boolean;
  memoryBudgetTokens: number;
  summaryDebounceSeconds: number;
  consolidationIntervalHours: number;
  salienceFloor: number;
  episodeRetentionDays: number;
  /** model of the extraction call; absent: the agent's defaultModel */
  extractionModel?: string;
  /** embedding model; absent: lexical recall only */
  embeddingModel?: string;
  /** MemoryConfig object name, or null when running on defaults */
  source: string | null;
}

const clamp = (v: unknown, r: { default: number; min: number; max: number }) =>
  typeof v === "number" && Number.isFinite(v) ? Math.min(r.max, Math.max(r.min, v)) : r.default;

export function settingsOf(spec: Partial<MemoryConfigSpec> | undefined, source: string | null): MemorySettings {
  const s = spec ?? {};
  return {
    enabled: s.enabled !== false,
    memoryBudgetTokens: Math.round(clamp(s.memoryBudgetTokens, memoryRanges.memoryBudgetTokens)),
    summaryDebounceSeconds: Math.round(clamp(s.summaryDebounceSeconds, memoryRanges.summaryDebounceSeconds)),
    consolidationIntervalHours: Math.round(clamp(s.consolidationIntervalHours, memoryRanges.consolidationIntervalHours)),
    salienceFloor: clamp(s.salienceFloor, memoryRanges.salienceFloor),
    episodeRetentionDays: Math.round(clamp(s.episodeRetentionDays, memoryRanges.episodeRetentionDays)),
    ...(s.extractionModel ? { extractionModel: s.extractionModel } : {}),
    ...(s.embeddingModel ? { embeddingModel: s.embeddingModel } : {}),
    source,
  };
}

export function currentSettings(store: ResourceStore): MemorySettings {
  const o = store.list({ kind: "MemoryConfig" }).sort((a, b) => a.name.localeCompare(b.name))[0];
  return settingsOf(o?.spec as Partial<MemoryConfigSpec> | undefined, o?.name ?? null);
}
