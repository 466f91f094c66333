// Media prices (Provider.spec.models[].perImage / perVideoSecond / perAudioMinute, USD), as the
// gate's reserved spend in micro-USD. A model without the price a call needs has none: budgeted
// keys are refused for it (gate.ts) rather than served for free.
import type { ResourceStore } from "../../prisma/resource-store";
import type { ProviderSpec } from "../../schemas/kinds/provider";

export type MediaUnit = "perImage" | "perVideoSecond" | "perAudioMinute";

const UNIT: Record<MediaUnit, string> = { perImage: "image", perVideoSecond: "video second", perAudioMinute: "audio minute" };

export interface MediaPrice {
  /** micro-USD for `quantity` units; undefined when the model has no such price */
  spendMicros?: number;
  /** the refusal's reason when unpriced */
  unpriced?: string;
}

export function mediaPrice(store: ResourceStore, provider: string, model: string | undefined, unit: MediaUnit, quantity: number): MediaPrice {
  const spec = store.get("Provider", provider)?.spec as ProviderSpec | undefined;
  const m = model === undefined ? undefined : spec?.models?.find((x) => x.name === model);
  const usd = m?.[unit];
  if (usd === undefined) {
    const what = model === undefined ? `provider ${provider}'s default model` : `model ${JSON.stringify(model)} (Provider ${provider})`;
    return { unpriced: `${what} has no ${unit} price (Provider spec.models[].${unit}) for a ${UNIT[unit]}` };
  }
  return { spendMicros: Math.round(usd * 1e6 * Math.max(0, quantity)) };
}
