// Consolidation of one agent's memory, in five recorded steps:
//   decay    salience of episodes and candidate facts halves every 30 days (since the previous
//            consolidation, or the record's creation); pinned facts do not decay
//   merge    near-duplicate episodes (word Jaccard >= 0.8 over summary and topics) fold into the
//            older one: lists united, salience the higher, mergedCount summed
//   promote  candidate facts supported by at least 2 sessions become pinned
//   evict    only when the agent is idle (no pending signal, no turn within the debounce):
//            episodes and candidate facts below salienceFloor are deleted; pinned facts stay
//   prune    episodes and transcript turns older than episodeRetentionDays are deleted (and
//            distilled signals with them)
import type Database from "better-sqlite3";
import type { IndexStore } from "./index-store";
import type { MemorySettings } from "./config";
import { episodeText } from "./store";
import { jaccard } from "./text";

export const HALF_LIFE_DAYS = 30;
export const MERGE_SIMILARITY = 0.8;
export const PROMOTE_SUPPORT = 2;
const DAY = 86_400_000;
/** merging compares pairs: only the most recent episodes of an agent take part */
const MERGE_WINDOW = 2000;

export interface ConsolidationReport {
  decay: { episodes: number; facts: number; since: number };
  merge: Array<{ into: number; merged: number; similarity: number }>;
  promote: number[];
  evict: { idle: boolean; episodes: number[]; facts: number[] };
  prune: { episodes: number; transcript: number; signals: number; before: number };
}

interface Ep {
  id: number;
  summary: string;
  topics: string;
  decisions: string;
  actionItems: string;
  salience: number;
  mergedCount: number;
  createdAt: number;
}

export function consolidateAgent(db: Database.Database, index: IndexStore, agent: string, s: MemorySettings, now: number, since: number | null, idle: boolean): ConsolidationReport {
  return db.transaction(() => {
    const rep: ConsolidationReport = { decay: { episodes: 0, facts: 0, since: since ?? 0 }, merge: [], promote: [], evict: { idle, episodes: [], facts: [] }, prune: { episodes: 0, transcript: 0, signals: 0, before: now - s.episodeRetentionDays * DAY } };
    // decay
    const factor = (created: number) => Math.pow(0.5, Math.max(0, now - Math.max(Number(created), since ?? 0)) / (HALF_LIFE_DAYS * DAY));
    const updE = db.prepare(`UPDATE MemoryEpisode SET salience = ? WHERE id = ?`);
    for (const r of db.prepare(`SELECT id, salience, createdAt FROM MemoryEpisode WHERE agent = ?`).all(agent) as any[]) {
      const f = factor(r.createdAt);
      if (f < 1) (updE.run(r.salience * f, r.id), rep.decay.episodes++);
    }
    const updF = db.prepare(`UPDATE MemoryFact SET salience = ? WHERE id = ?`);
    for (const r of db.prepare(`SELECT id, salience, createdAt FROM MemoryFact WHERE agent = ? AND status = 'candidate'`).all(agent) as any[]) {
      const f = factor(r.createdAt);
      if (f < 1) (updF.run(r.salience * f, r.id), rep.decay.facts++);
    }
    // merge
    const eps = db.prepare(`SELECT id, summary, topics, decisions, actionItems, salience, mergedCount, createdAt FROM MemoryEpisode WHERE agent = ? ORDER BY createdAt DESC, id DESC LIMIT ?`).all(agent, MERGE_WINDOW) as Ep[];
    eps.reverse(); // oldest first: later duplicates fold into earlier ones
    const gone = new Set<number>();
    const keyText = (e: Ep) => `${e.summary} ${JSON.parse(e.topics).join(" ")}`;
    for (let i = 0; i < eps.length; i++) {
      const a = eps[i];
      if (gone.has(a.id)) continue;
      for (let j = i + 1; j < eps.length; j++) {
        const b = eps[j];
        if (gone.has(b.id)) continue;
        const sim = jaccard(keyText(a), keyText(b));
        if (sim < MERGE_SIMILARITY) continue;
        const u = (x: string, y: string) => JSON.stringify([...new Set([...JSON.parse(x), ...JSON.parse(y)])]);
        a.topics = u(a.topics, b.topics);
        a.decisions = u(a.decisions, b.decisions);
        a.actionItems = u(a.actionItems, b.actionItems);
        a.salience = Math.max(a.salience, b.salience);
        a.mergedCount += b.mergedCount;
        db.prepare(`UPDATE MemoryEpisode SET topics = ?, decisions = ?, actionItems = ?, salience = ?, mergedCount = ?, updatedAt = ? WHERE id = ?`).run(a.topics, a.decisions, a.actionItems, a.salience, a.mergedCount, now, a.id);
        db.prepare(`DELETE FROM MemoryEpisode WHERE id = ?`).run(b.id);
        index.drop(agent, "episode", b.id);
        index.put(agent, "episode", a.id, episodeText({ summary: a.summary, topics: JSON.parse(a.topics), decisions: JSON.parse(a.decisions), action_items: JSON.parse(a.actionItems) }));
        gone.add(b.id);
        rep.merge.push({ into: a.id, merged: b.id, similarity: Math.round(sim * 1000) / 1000 });
      }
    }
    // promote
    for (const r of db.prepare(`SELECT id FROM MemoryFact WHERE agent = ? AND status = 'candidate' AND support >= ?`).all(agent, PROMOTE_SUPPORT) as any[]) {
      db.prepare(`UPDATE MemoryFact SET status = 'pinned', updatedAt = ? WHERE id = ?`).run(now, r.id);
      rep.promote.push(r.id);
    }
    // evict (idle only)
    if (idle) {
      for (const r of db.prepare(`SELECT id FROM MemoryEpisode WHERE agent = ? AND salience < ?`).all(agent, s.salienceFloor) as any[]) {
        db.prepare(`DELETE FROM MemoryEpisode WHERE id = ?`).run(r.id);
        index.drop(agent, "episode", r.id);
        rep.evict.episodes.push(r.id);
      }
      for (const r of db.prepare(`SELECT id FROM MemoryFact WHERE agent = ? AND status = 'candidate' AND salience < ?`).all(agent, s.salienceFloor) as any[]) {
        db.prepare(`DELETE FROM MemoryFact WHERE id = ?`).run(r.id);
        index.drop(agent, "fact", r.id);
        rep.evict.facts.push(r.id);
      }
    }
    // prune by retention
    const before = rep.prune.before;
    for (const r of db.prepare(`SELECT id FROM MemoryEpisode WHERE agent = ? AND createdAt < ?`).all(agent, before) as any[]) {
      db.prepare(`DELETE FROM MemoryEpisode WHERE id = ?`).run(r.id);
      index.drop(agent, "episode", r.id);
      rep.prune.episodes++;
    }
    for (const r of db.prepare(`SELECT id FROM MemoryTranscript WHERE agent = ? AND createdAt < ?`).all(agent, before) as any[]) {
      db.prepare(`DELETE FROM MemoryTranscript WHERE id = ?`).run(r.id);
      index.drop(agent, "transcript", r.id);
      rep.prune.transcript++;
    }
    rep.prune.signals = db.prepare(`DELETE FROM MemorySignal WHERE agent = ? AND status = 'distilled' AND createdAt < ?`).run(agent, before).changes;
    return rep;
  })();
}

/** Agents that have any memory material. */
export function agentsWithMemory(db: Database.Database): string[] {
  return (db.prepare(`SELECT agent FROM MemoryEpisode UNION SELECT agent FROM MemoryFact UNION SELECT agent FROM MemoryTranscript UNION SELECT agent FROM MemorySignal`).all() as any[]).map((r) => r.agent);
}

/** Delete every record of an agent (the index goes with it: IndexStore.remove). */
export function purgeRecords(db: Database.Database, agent: string): Record<string, number> {
  return db.transaction(() => {
    const out: Record<string, number> = {};
    for (const t of ["MemorySignal", "MemoryTranscript", "MemoryEpisode", "MemoryFact", "MemoryEntity", "MemoryIdentity", "MemoryDeadLetter"]) {
      out[t.replace("Memory", "").toLowerCase()] = db.prepare(`DELETE FROM ${t} WHERE agent = ?`).run(agent).changes;
    }
    return out;
  })();
}
