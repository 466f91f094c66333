// Consolidation of one agent's memory, in five recorded steps, decided here once for both stores
// (each store only reads a snapshot and writes the outcome, in one transaction: ConsolidationTx
// in backend.ts; sqlite-backend.ts and pg/consolidate.ts implement it):
//   decay    salience of episodes and candidate facts halves every 30 days (since the previous
//            consolidation, or the record's creation); pinned facts do not decay
//   merge    near-duplicate episodes (word Jaccard >= 0.8 over summary and topics) fold into the
//            older one: lists united, salience the higher, mergedCount summed
//   promote  candidate facts supported by at least 2 sessions become pinned
//   evict    only when the agent is idle (no pending signal, no turn within the debounce):
//            episodes and candidate facts below salienceFloor are deleted; pinned facts stay
//   prune    episodes and transcript turns older than episodeRetentionDays are deleted (and
//            distilled signals with them)
import type { MemorySettings } from "./config";
import { after, type ConsolidationSnapshot, type ConsolidationStore, type ConsolidationWrites, type EpisodeRow, type Maybe } from "./backend";
import { episodeText } from "./store";
import { jaccard } from "./text";

export const HALF_LIFE_DAYS = 30;
export const MERGE_SIMILARITY = 0.8;
export const PROMOTE_SUPPORT = 2;
const DAY = 86_400_000;
/** merging compares pairs: only the most recent episodes of an agent take part */
export const MERGE_WINDOW = 2000;

export interface ConsolidationReport {
  decay: { episodes: number; facts: number; since: number };
  merge: Array<{ into: number; merged: number; similarity: number }>;
  promote: number[];
  evict: { idle: boolean; episodes: number[]; facts: number[] };
  prune: { episodes: number; transcript: number; signals: number; before: number };
}

export function consolidateAgent(store: ConsolidationStore, agent: string, s: MemorySettings, now: number, since: number | null, idle: boolean): Maybe<ConsolidationReport> {
  const before = now - s.episodeRetentionDays * DAY;
  return store.consolidation((t) =>
    after(t.snapshot(agent, MERGE_WINDOW, before), (snap) => {
      const { report, writes } = plan(snap, s, now, since, idle, before);
      return after(t.write(agent, writes), (signals) => ((report.prune.signals = signals), report));
    }),
  );
}

/** The five steps over a snapshot: what the run reports and what the store writes. */
export function plan(snap: ConsolidationSnapshot, s: MemorySettings, now: number, since: number | null, idle: boolean, before: number): { report: ConsolidationReport; writes: ConsolidationWrites } {
  const report: ConsolidationReport = { decay: { episodes: 0, facts: 0, since: since ?? 0 }, merge: [], promote: [], evict: { idle, episodes: [], facts: [] }, prune: { episodes: 0, transcript: 0, signals: 0, before } };
  const writes: ConsolidationWrites = { now, salience: { episode: [], fact: [] }, merged: [], pin: [], remove: { episode: [], fact: [], transcript: [] }, signalsBefore: before };
  const byId = (a: number, b: number) => a - b;
  // decay
  const factor = (created: number) => Math.pow(0.5, Math.max(0, now - Math.max(Number(created), since ?? 0)) / (HALF_LIFE_DAYS * DAY));
  // each record's decayed salience by id; the changed ones go to `changed` to be written
  const decayed = (items: ReadonlyArray<{ id: number; createdAt: number; salience: number }>, changed: Array<[number, number]>) => {
    const out = new Map<number, number>();
    for (const x of items) {
      const f = factor(x.createdAt);
      out.set(x.id, f < 1 ? x.salience * f : x.salience);
      if (f < 1) changed.push([x.id, x.salience * f]);
    }
    return out;
  };
  const epSalience = decayed(snap.episodes, writes.salience.episode);
  const factSalience = decayed(snap.candidates, writes.salience.fact);
  report.decay.episodes = writes.salience.episode.length;
  report.decay.facts = writes.salience.fact.length;
  // merge: oldest first, so later near-duplicates fold into earlier ones
  const eps = snap.recent.map((e) => ({ ...e, salience: epSalience.get(e.id) ?? e.salience })).sort((a, b) => a.createdAt - b.createdAt || a.id - b.id);
  const gone = new Set<number>();
  const changed = new Set<EpisodeRow>();
  const keyText = (e: EpisodeRow) => `${e.summary} ${JSON.parse(e.topics).join(" ")}`;
  const unite = (x: string, y: string) => JSON.stringify([...new Set([...JSON.parse(x), ...JSON.parse(y)])]);
  for (let i = 0; i < eps.length; i++) {
    const a = eps[i];
    if (gone.has(a.id)) continue;
    for (let j = i + 1; j < eps.length; j++) {
      const b = eps[j];
      if (gone.has(b.id)) continue;
      const sim = jaccard(keyText(a), keyText(b));
      if (sim < MERGE_SIMILARITY) continue;
      a.topics = unite(a.topics, b.topics);
      a.decisions = unite(a.decisions, b.decisions);
      a.actionItems = unite(a.actionItems, b.actionItems);
      a.salience = Math.max(a.salience, b.salience);
      a.mergedCount += b.mergedCount;
      changed.add(a);
      gone.add(b.id);
      report.merge.push({ into: a.id, merged: b.id, similarity: Math.round(sim * 1000) / 1000 });
    }
  }
  for (const a of changed) {
    epSalience.set(a.id, a.salience);
    const text = episodeText({ summary: a.summary, topics: JSON.parse(a.topics), decisions: JSON.parse(a.decisions), action_items: JSON.parse(a.actionItems) });
    writes.merged.push({ id: a.id, topics: a.topics, decisions: a.decisions, actionItems: a.actionItems, salience: a.salience, mergedCount: a.mergedCount, text });
  }
  // promote
  report.promote = snap.candidates.filter((c) => c.support >= PROMOTE_SUPPORT).map((c) => c.id).sort(byId);
  writes.pin = report.promote;
  const pinned = new Set(report.promote);
  // evict (idle only)
  const left = snap.episodes.filter((e) => !gone.has(e.id)).sort((a, b) => a.id - b.id);
  if (idle) {
    report.evict.episodes = left.filter((e) => epSalience.get(e.id)! < s.salienceFloor).map((e) => e.id);
    report.evict.facts = snap.candidates.filter((c) => !pinned.has(c.id) && factSalience.get(c.id)! < s.salienceFloor).map((c) => c.id).sort(byId);
  }
  const evicted = new Set(report.evict.episodes);
  // prune by retention
  // an episode of an ingested session_date is as old as that date (its transcript turns are
  // stored with it as createdAt), not as its distillation: retention counts from it
  const datedAt = (e: { createdAt: number; sessionDate?: string | null }) => {
    const d = e.sessionDate ? Date.parse(e.sessionDate) : NaN;
    return Number.isFinite(d) ? d : Number(e.createdAt);
  };
  const old = left.filter((e) => !evicted.has(e.id) && datedAt(e) < before).map((e) => e.id);
  report.prune.episodes = old.length;
  report.prune.transcript = snap.oldTranscript.length;
  writes.remove = { episode: [...gone, ...report.evict.episodes, ...old], fact: report.evict.facts, transcript: snap.oldTranscript };
  return { report, writes };
}
