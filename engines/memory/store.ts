// The memory records (signals, transcript, episodes, facts, entities, identity, dead letters,
// runs) on the direct SQLite handle: synchronous prepared statements, microseconds each, where a
// Prisma call costs about a millisecond (FACTS.md). The lexical index is index-store.ts.
import type Database from "better-sqlite3";
import type { DeadLetter, Extraction, RunRecord, SignalRow, TurnSource } from "./types";
import { normFact, turnHash } from "./text";
import type { IndexStore } from "./index-store";

export interface TurnInput {
  agent: string;
  conversationId: string;
  source: TurnSource;
  user: string;
  assistant: string;
  sessionDate?: string | null;
  project?: string | null;
  /** false: transcript only (skip_extraction) */
  signal: boolean;
  now: number;
}

export interface SavedExtraction {
  episodeId: number;
  factsNew: number[];
  /** the text of each new fact, in factsNew's order (what its vector is computed from) */
  factsNewText: string[];
  factsSupported: number[];
  entities: number;
  identity: number;
}

const json = (v: unknown) => JSON.stringify(v ?? []);

export class MemoryStore {
  private readonly s: Record<string, Database.Statement>;

  constructor(readonly db: Database.Database, private readonly index: IndexStore) {
    const p = (sql: string) => db.prepare(sql);
    this.s = {
      insTranscript: p(`INSERT OR IGNORE INTO MemoryTranscript (agent, conversationId, turnHash, userText, assistantText, sessionDate, source, createdAt) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
      insSignal: p(`INSERT INTO MemorySignal (agent, conversationId, source, turnHash, userText, assistantText, sessionDate, project, status, attempts, createdAt) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?)`),
      pending: p(`SELECT * FROM MemorySignal WHERE agent = ? AND conversationId = ? AND status = 'pending' ORDER BY id`),
      pendingSessions: p(`SELECT agent, conversationId, source, MAX(createdAt) AS last FROM MemorySignal WHERE status = 'pending' GROUP BY agent, conversationId`),
      pendingCount: p(`SELECT COUNT(*) AS n FROM MemorySignal WHERE agent = ? AND status = 'pending'`),
      pendingIn: p(`SELECT COUNT(*) AS n FROM MemorySignal WHERE agent = ? AND conversationId = ? AND status = 'pending'`),
      setSignal: p(`UPDATE MemorySignal SET status = ?, attempts = ? WHERE id = ?`),
      claimSignal: p(`UPDATE MemorySignal SET status = 'distilled', attempts = ? WHERE id = ? AND status = 'pending'`),
      insEpisode: p(`INSERT INTO MemoryEpisode (agent, conversationId, summary, topics, decisions, actionItems, entities, salience, sessionDate, project, mergedCount, createdAt, updatedAt) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)`),
      factByNorm: p(`SELECT id, salience FROM MemoryFact WHERE agent = ? AND norm = ?`),
      insFact: p(`INSERT INTO MemoryFact (agent, text, norm, status, support, salience, createdAt, updatedAt) VALUES (?, ?, ?, ?, 1, ?, ?, ?)`),
      supportFact: p(`UPDATE MemoryFact SET support = support + 1, salience = MAX(salience, ?), updatedAt = ? WHERE id = ?`),
      upEntity: p(`INSERT INTO MemoryEntity (agent, name, type, description, mentions, updatedAt) VALUES (?, ?, ?, ?, 1, ?)
                   ON CONFLICT(agent, name) DO UPDATE SET mentions = mentions + 1, type = COALESCE(excluded.type, type), description = COALESCE(excluded.description, description), updatedAt = excluded.updatedAt`),
      upIdentity: p(`INSERT INTO MemoryIdentity (agent, key, value, updatedAt) VALUES (?, ?, ?, ?) ON CONFLICT(agent, key) DO UPDATE SET value = excluded.value, updatedAt = excluded.updatedAt`),
      insDead: p(`INSERT INTO MemoryDeadLetter (id, agent, conversationId, reason, attempts, signalIds, createdAt) VALUES (?, ?, ?, ?, ?, ?, ?)`),
      deadOf: p(`SELECT * FROM MemoryDeadLetter WHERE agent = ? ORDER BY createdAt DESC, id LIMIT ?`),
      deadAll: p(`SELECT * FROM MemoryDeadLetter ORDER BY createdAt DESC, id LIMIT ?`),
      deadById: p(`SELECT * FROM MemoryDeadLetter WHERE id = ?`),
      resolveDead: p(`UPDATE MemoryDeadLetter SET resolvedAt = ? WHERE id = ?`),
      insRun: p(`INSERT INTO MemoryRun (id, agent, type, trigger, startedAt, finishedAt, result) VALUES (?, ?, ?, ?, ?, ?, ?)`),
      runsOf: p(`SELECT * FROM MemoryRun WHERE agent = ? AND (? IS NULL OR type = ?) ORDER BY startedAt DESC, rowid DESC LIMIT ?`),
      runsAll: p(`SELECT * FROM MemoryRun WHERE (? IS NULL OR type = ?) ORDER BY startedAt DESC, rowid DESC LIMIT ?`),
      identity: p(`SELECT key, value, updatedAt FROM MemoryIdentity WHERE agent = ? ORDER BY key`),
      entities: p(`SELECT name, type, description, mentions, updatedAt FROM MemoryEntity WHERE agent = ? ORDER BY mentions DESC, name LIMIT ?`),
      counts: p(`SELECT
          (SELECT COUNT(*) FROM MemoryFact WHERE agent = @a AND status = 'pinned') AS pinned,
          (SELECT COUNT(*) FROM MemoryFact WHERE agent = @a AND status = 'candidate') AS candidates,
          (SELECT COUNT(*) FROM MemoryEpisode WHERE agent = @a) AS episodes,
          (SELECT COUNT(*) FROM MemoryTranscript WHERE agent = @a) AS transcript,
          (SELECT COUNT(*) FROM MemorySignal WHERE agent = @a AND status = 'pending') AS pending,
          (SELECT COUNT(*) FROM MemoryDeadLetter WHERE agent = @a AND resolvedAt IS NULL) AS dead_letters,
          (SELECT COUNT(*) FROM MemoryEntity WHERE agent = @a) AS entities,
          (SELECT COUNT(*) FROM MemoryIdentity WHERE agent = @a) AS identity`),
    };
  }

  /** Store a turn in the transcript (and as a pending signal). null: this exact turn of this
   * conversation is already stored (idempotent ingest). */
  addTurn(t: TurnInput): { transcriptId: number; signalId: number | null } | null {
    return this.db.transaction(() => {
      const h = turnHash(t.user, t.assistant);
      const r = this.s.insTranscript.run(t.agent, t.conversationId, h, t.user, t.assistant, t.sessionDate ?? null, t.source, t.now);
      if (!r.changes) return null;
      const transcriptId = Number(r.lastInsertRowid);
      this.index.put(t.agent, "transcript", transcriptId, `${t.user}\n${t.assistant}`);
      if (!t.signal) return { transcriptId, signalId: null };
      const sr = this.s.insSignal.run(t.agent, t.conversationId, t.source, h, t.user, t.assistant, t.sessionDate ?? null, t.project ?? null, t.now);
      return { transcriptId, signalId: Number(sr.lastInsertRowid) };
    })();
  }

  pending(agent: string, conversationId: string): SignalRow[] {
    return this.s.pending.all(agent, conversationId) as SignalRow[];
  }

  pendingSessions(): Array<{ agent: string; conversationId: string; source: TurnSource; last: number }> {
    return this.s.pendingSessions.all() as any;
  }

  pendingIn(agent: string, conversationId: string): number {
    return (this.s.pendingIn.get(agent, conversationId) as { n: number }).n;
  }

  pendingCount(agent: string): number {
    return (this.s.pendingCount.get(agent) as { n: number }).n;
  }

  setSignals(ids: number[], status: string, attempts: number): void {
    this.db.transaction(() => {
      for (const id of ids) this.s.setSignal.run(status, attempts, id);
    })();
  }

  /** Persist one extraction and mark its signals distilled, in one transaction. */
  saveExtraction(agent: string, conversationId: string, x: Extraction, signals: SignalRow[], now: number): SavedExtraction {
    return this.db.transaction(() => {
      // claim the signals first (as pg/records.ts does): the extraction call is awaited outside
      // this transaction, and a purge of the agent meanwhile deletes them; saving anyway would
      // bring the purged agent's episode, facts and index table back. Throwing rolls back.
      let claimed = 0;
      for (const sg of signals) claimed += this.s.claimSignal.run(sg.attempts, sg.id).changes;
      if (claimed !== signals.length) throw Object.assign(new Error("these turns are no longer pending (distilled or purged meanwhile)"), { code: "already_distilled" });
      const e = x.episode;
      const first = signals[0];
      const r = this.s.insEpisode.run(agent, conversationId, e.summary, json(e.topics), json(e.decisions), json(e.action_items), json(x.entities.map((n) => n.name)), e.salience, first?.sessionDate ?? null, first?.project ?? null, now, now);
      const episodeId = Number(r.lastInsertRowid);
      this.index.put(agent, "episode", episodeId, episodeText(e));
      const factsNew: number[] = [];
      const factsNewText: string[] = [];
      const factsSupported: number[] = [];
      // a fact the model repeats within one extraction is one session's support, not two
      // (promotion pins candidates supported by 2 sessions)
      const seen = new Set<string>();
      for (const f of x.facts) {
        const norm = normFact(f);
        if (!norm || seen.has(norm)) continue;
        seen.add(norm);
        const had = this.s.factByNorm.get(agent, norm) as { id: number } | undefined;
        if (had) {
          this.s.supportFact.run(e.salience, now, had.id);
          factsSupported.push(had.id);
        } else {
          const id = Number(this.s.insFact.run(agent, f.trim(), norm, "candidate", e.salience, now, now).lastInsertRowid);
          this.index.put(agent, "fact", id, f.trim());
          factsNew.push(id);
          factsNewText.push(f.trim());
        }
      }
      for (const n of x.entities) this.s.upEntity.run(agent, n.name, n.type ?? null, n.description ?? null, now);
      for (const i of x.identity) this.s.upIdentity.run(agent, i.key, i.value, now);
      return { episodeId, factsNew, factsNewText, factsSupported, entities: x.entities.length, identity: x.identity.length };
    })();
  }

  addDeadLetter(d: DeadLetter): void {
    this.db.transaction(() => {
      this.s.insDead.run(d.id, d.agent, d.conversationId, d.reason, d.attempts, JSON.stringify(d.signalIds), d.createdAt);
      for (const id of d.signalIds) this.s.setSignal.run("dead", d.attempts, id);
    })();
  }

  deadLetters(agent: string | undefined, limit = 100): DeadLetter[] {
    const rows = (agent ? this.s.deadOf.all(agent, limit) : this.s.deadAll.all(limit)) as any[];
    return rows.map(deadOf);
  }

  deadLetter(id: string): DeadLetter | undefined {
    const r = this.s.deadById.get(id) as any;
    return r ? deadOf(r) : undefined;
  }

  /** Put a dead letter's signals back to pending (a retry); marks it resolved. */
  requeueDead(d: DeadLetter, now: number): void {
    this.db.transaction(() => {
      for (const id of d.signalIds) this.s.setSignal.run("pending", 0, id);
      this.s.resolveDead.run(now, d.id);
    })();
  }

  addRun(r: RunRecord): void {
    this.s.insRun.run(r.id, r.agent, r.type, r.trigger, r.startedAt, r.finishedAt, JSON.stringify(r.result));
  }

  runs(agent: string | undefined, type: string | undefined, limit = 50): RunRecord[] {
    const t = type ?? null;
    const rows = (agent ? this.s.runsOf.all(agent, t, t, limit) : this.s.runsAll.all(t, t, limit)) as any[];
    return rows.map((r) => ({ ...r, startedAt: Number(r.startedAt), finishedAt: r.finishedAt == null ? null : Number(r.finishedAt), result: JSON.parse(r.result) }));
  }

  identity(agent: string): Array<{ key: string; value: string; updatedAt: number }> {
    return this.s.identity.all(agent) as any;
  }

  entities(agent: string, limit = 50): Array<{ name: string; type: string | null; description: string | null; mentions: number; updatedAt: number }> {
    return this.s.entities.all(agent, limit) as any;
  }

  counts(agent: string): Record<string, number> {
    return this.s.counts.get({ a: agent }) as Record<string, number>;
  }
}

export function episodeText(e: { summary: string; topics?: string[]; decisions?: string[]; action_items?: string[] }): string {
  const parts = [e.summary];
  if (e.topics?.length) parts.push(`Topics: ${e.topics.join(", ")}`);
  if (e.decisions?.length) parts.push(`Decisions: ${e.decisions.join("; ")}`);
  if (e.action_items?.length) parts.push(`Action items: ${e.action_items.join("; ")}`);
  return parts.join("\n");
}

function deadOf(r: any): DeadLetter {
  return { id: r.id, agent: r.agent, conversationId: r.conversationId, reason: r.reason, attempts: r.attempts, signalIds: JSON.parse(r.signalIds), createdAt: Number(r.createdAt), resolvedAt: r.resolvedAt == null ? null : Number(r.resolvedAt) };
}
