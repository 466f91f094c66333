// Embedded mode's memory storage: the records, the FTS5 index and search on the SQLite file's
// direct handle (store.ts, index-store.ts, search.ts), synchronous as they were; consolidation's
// reads and writes (its steps are consolidate.ts's, shared with PostgreSQL).
import type Database from "better-sqlite3";
import type { ConsolidationSnapshot, ConsolidationTx, ConsolidationWrites, Maybe, MemoryBackend } from "./backend";
import { MemoryStore } from "./store";
import { IndexStore } from "./index-store";
import { MemorySearch } from "./search";

const MEMORY_TABLES = ["MemorySignal", "MemoryTranscript", "MemoryEpisode", "MemoryFact", "MemoryEntity", "MemoryIdentity", "MemoryDeadLetter"];

export class SqliteMemory implements MemoryBackend {
  readonly dialect = "sqlite" as const;
  readonly index: IndexStore;
  readonly store: MemoryStore;
  readonly searcher: MemorySearch;
  private readonly lastTurn: Database.Statement;
  /** each agent's current direct-chat conversation: this process is the only one serving it */
  private readonly chats = new Map<string, string>();

  constructor(private readonly db: Database.Database) {
    this.index = new IndexStore(db);
    this.store = new MemoryStore(db, this.index);
    this.searcher = new MemorySearch(db, this.index);
    this.lastTurn = db.prepare(`SELECT MAX(createdAt) AS t FROM MemorySignal WHERE agent = ?`);
  }

  lastTurnAt(agent: string): number | null {
    const t = (this.lastTurn.get(agent) as { t: number | null }).t;
    return t == null ? null : Number(t);
  }

  switchChat(agent: string, conversationId: string): string | null {
    const prev = this.chats.get(agent) ?? null;
    this.chats.set(agent, conversationId);
    return prev;
  }

  agentsWithMemory(): string[] {
    return (this.db.prepare(`SELECT agent FROM MemoryEpisode UNION SELECT agent FROM MemoryFact UNION SELECT agent FROM MemoryTranscript UNION SELECT agent FROM MemorySignal`).all() as any[]).map((r) => r.agent);
  }

  consolidation<T>(fn: (t: ConsolidationTx) => Maybe<T>): T {
    const out = this.db.transaction(() => fn({ snapshot: (a, w, b) => this.snapshot(a, w, b), write: (a, w) => this.write(a, w) }))();
    if (out instanceof Promise) throw new Error("consolidation on SQLite runs synchronously");
    return out;
  }

  private snapshot(agent: string, window: number, before: number): ConsolidationSnapshot {
    const num = <R extends { createdAt: unknown }>(rows: R[]) => rows.map((r) => ({ ...r, createdAt: Number(r.createdAt) }));
    return {
      episodes: num(this.db.prepare(`SELECT id, salience, createdAt, sessionDate FROM MemoryEpisode WHERE agent = ?`).all(agent) as any[]),
      recent: num(this.db.prepare(`SELECT id, summary, topics, decisions, actionItems, salience, mergedCount, createdAt FROM MemoryEpisode WHERE agent = ? ORDER BY createdAt DESC, id DESC LIMIT ?`).all(agent, window) as any[]),
      candidates: num(this.db.prepare(`SELECT id, salience, createdAt, support FROM MemoryFact WHERE agent = ? AND status = 'candidate'`).all(agent) as any[]),
      oldTranscript: (this.db.prepare(`SELECT id FROM MemoryTranscript WHERE agent = ? AND createdAt < ?`).all(agent, before) as any[]).map((r) => r.id),
    };
  }

  private write(agent: string, w: ConsolidationWrites): number {
    const db = this.db;
    const updE = db.prepare(`UPDATE MemoryEpisode SET salience = ? WHERE id = ?`);
    for (const [id, s] of w.salience.episode) updE.run(s, id);
    const updF = db.prepare(`UPDATE MemoryFact SET salience = ? WHERE id = ?`);
    for (const [id, s] of w.salience.fact) updF.run(s, id);
    const merge = db.prepare(`UPDATE MemoryEpisode SET topics = ?, decisions = ?, actionItems = ?, salience = ?, mergedCount = ?, updatedAt = ? WHERE id = ?`);
    for (const e of w.merged) {
      merge.run(e.topics, e.decisions, e.actionItems, e.salience, e.mergedCount, w.now, e.id);
      this.index.put(agent, "episode", e.id, e.text);
    }
    const pin = db.prepare(`UPDATE MemoryFact SET status = 'pinned', updatedAt = ? WHERE id = ?`);
    for (const id of w.pin) pin.run(w.now, id);
    for (const [table, kind] of [["MemoryEpisode", "episode"], ["MemoryFact", "fact"], ["MemoryTranscript", "transcript"]] as const) {
      const del = db.prepare(`DELETE FROM ${table} WHERE id = ?`);
      for (const id of w.remove[kind]) (del.run(id), this.index.drop(agent, kind, id));
    }
    return db.prepare(`DELETE FROM MemorySignal WHERE agent = ? AND status = 'distilled' AND createdAt < ?`).run(agent, w.signalsBefore).changes;
  }

  /** Delete every record of an agent (the index goes with it: IndexStore.remove). */
  purgeRecords(agent: string): Record<string, number> {
    this.chats.delete(agent);
    return this.db.transaction(() => {
      const out: Record<string, number> = {};
      for (const t of MEMORY_TABLES) out[t.replace("Memory", "").toLowerCase()] = this.db.prepare(`DELETE FROM ${t} WHERE agent = ?`).run(agent).changes;
      return out;
    })();
  }

  async close(): Promise<void> {}
}
