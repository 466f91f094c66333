// Recall for an agent run: identity first, then the best hits (facts, episodes, transcript) of
// the run's query, as one system message of at most memoryBudgetTokens tokens, counted with the
// run model's tokenizer (estimate for remote models). Items are taken greedily in rank order; an
// item that does not fit is skipped and smaller ones after it may still fit.
import type { Hit } from "./types";

export const RECALL_HEADER = "Memory from earlier conversations with this user (it may be incomplete or outdated; the current conversation wins when they disagree):";

export interface RecallResult {
  text: string | null;
  tokens: number;
  budget: number;
  countedWith: "tokenizer" | "estimate";
  items: Array<{ kind: string; id: number | string; text: string }>;
  /** hits that did not fit */
  skipped: number;
}

export function hitLine(h: Hit): string {
  const label = h.kind === "fact" ? (h.status === "pinned" ? "fact" : "noted") : h.kind === "episode" ? "earlier session" : "said before";
  return `- [${label}] ${h.text.replace(/\s*\n\s*/g, " ")}`;
}

export async function buildRecall(
  identity: Array<{ key: string; value: string }>,
  hits: Hit[],
  budget: number,
  counter: { source: "tokenizer" | "estimate"; count: (text: string) => Promise<number> },
): Promise<RecallResult> {
  const cands: Array<{ kind: string; id: number | string; line: string; text: string }> = [
    ...identity.map((i) => ({ kind: "identity", id: i.key, line: `- [about] ${i.key}: ${i.value}`, text: `${i.key}: ${i.value}` })),
    ...hits.map((h) => ({ kind: h.kind, id: h.id, line: hitLine(h), text: h.text })),
  ];
  let text = RECALL_HEADER;
  let tokens = await counter.count(text);
  const items: RecallResult["items"] = [];
  let skipped = 0;
  if (tokens > budget) return { text: null, tokens: 0, budget, countedWith: counter.source, items, skipped: cands.length };
  for (const c of cands) {
    const next = `${text}\n${c.line}`;
    const n = await counter.count(next);
    if (n > budget) {
      skipped++;
      continue;
    }
    text = next;
    tokens = n;
    items.push({ kind: c.kind, id: c.id, text: c.text });
  }
  if (!items.length) return { text: null, tokens: 0, budget, countedWith: counter.source, items, skipped };
  return { text, tokens, budget, countedWith: counter.source, items, skipped };
}
