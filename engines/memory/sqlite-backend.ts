// Embedded mode's memory storage: the records, the FTS5 index and search on the SQLite file's
// direct handle (store.ts, index-store.ts, search.ts, consolidate.ts), synchronous as they were.
import type Database from "better-sqlite3";
import type { MemoryBackend } from "./backend";
import type { MemorySettings } from "./config";
import { MemoryStore } from "./store";
import { IndexStore } from "./index-store";
import { MemorySearch } from "./search";
import { agentsWithMemory, consolidateAgent, purgeRecords, type ConsolidationReport } from "./consolidate";

export class SqliteMemory implements MemoryBackend {
  readonly dialect = "sqlite" as const;
  readonly index: IndexStore;
  readonly store: MemoryStore;
  readonly searcher: MemorySearch;
  private readonly lastTurn: Database.Statement;

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

  agentsWithMemory(): string[] {
    return agentsWithMemory(this.db);
  }

  consolidateAgent(agent: string, s: MemorySettings, now: number, since: number | null, idle: boolean): ConsolidationReport {
    return consolidateAgent(this.db, this.index, agent, s, now, since, idle);
  }

  purgeRecords(agent: string): Record<string, number> {
    return purgeRecords(this.db, agent);
  }

  async close(): Promise<void> {}
}
