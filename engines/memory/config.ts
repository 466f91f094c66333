// The effective memory settings: the MemoryConfig singleton (fractions rounded and values clamped
// into the spec's ranges by manifests/normalize.ts, which also words the warnings) or the defaults
// when there is none. The store keeps the spec as written.
import type { ResourceStore } from "../../prisma/resource-store";
import { memoryRanges, type MemoryConfigSpec } from "../../schemas/kinds/memory-config";
import { normalizeMemoryValue, normalizeSpec } from "../../manifests/normalize";

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
  /** what normalization changed (rounded or clamped), in words; empty when the spec was in range */
  warnings: string[];
}

const norm = (s: Partial<MemoryConfigSpec>, field: keyof typeof memoryRanges): number => {
  const v = s[field];
  return typeof v === "number" && Number.isFinite(v) ? normalizeMemoryValue(field, v).value : memoryRanges[field].default;
};

export function settingsOf(spec: Partial<MemoryConfigSpec> | undefined, source: string | null): MemorySettings {
  const s = spec ?? {};
  return {
    enabled: s.enabled !== false,
    memoryBudgetTokens: norm(s, "memoryBudgetTokens"),
    summaryDebounceSeconds: norm(s, "summaryDebounceSeconds"),
    consolidationIntervalHours: norm(s, "consolidationIntervalHours"),
    salienceFloor: norm(s, "salienceFloor"),
    episodeRetentionDays: norm(s, "episodeRetentionDays"),
    ...(s.extractionModel ? { extractionModel: s.extractionModel } : {}),
    ...(s.embeddingModel ? { embeddingModel: s.embeddingModel } : {}),
    source,
    warnings: normalizeSpec("MemoryConfig", s).map((c) => c.message),
  };
}

export function currentSettings(store: ResourceStore): MemorySettings {
  const o = store.list({ kind: "MemoryConfig" }).sort((a, b) => a.name.localeCompare(b.name))[0];
  return settingsOf(o?.spec as Partial<MemoryConfigSpec> | undefined, o?.name ?? null);
}
