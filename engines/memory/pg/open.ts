// Memory on the shared PostgreSQL (SVC_DATABASE_URL): records, index, search and consolidation
// (this folder) with the scheduler of jobs and leases (jobs.ts). The tables come with the store's
// migrations (prisma/postgres/migrations), applied before the engines start.
import type pg from "pg";
import type { ClosablePool } from "../../store/pg-pool";
import type { Logger } from "../../host";
import type { ConsolidationTx, Maybe, MemoryBackend } from "../backend";
import { memoryPool, tx } from "./db";
import { PgRecords } from "./records";
import { PgIndex, PgSearch } from "./search";
import { pgConsolidationTx } from "./consolidate";
import { PgScheduler } from "./jobs";
import type { Clock } from "../clock";

const MEMORY_TABLES = ["memorysignal", "memorytranscript", "memoryepisode", "memoryfact", "memoryentity", "memoryidentity", "memorydeadletter"];
// the agent's conversation becomes $2; answers the one it replaces (its row locked meanwhile, so
// two replicas switching at once each see the other's)
const SWITCH_CHAT = `UPDATE memorychat AS n SET conversationid = $2
  FROM (SELECT agent, conversationid FROM memorychat WHERE agent = $1 FOR UPDATE) AS o WHERE n.agent = o.agent RETURNING o.conversationid AS prev`;

export class PgMemory implements MemoryBackend {
  readonly dialect = "postgresql" as const;
  readonly store: PgRecords;
  readonly index: PgIndex;
  readonly searcher: PgSearch;

  readonly pool: pg.Pool;

  constructor(
    private readonly conns: ClosablePool,
    /** the server offers pgvector (not used yet: vectors are scored in process) */ readonly pgvector: boolean,
    private readonly log: Logger,
  ) {
    const pool = (this.pool = conns.pool);
    this.store = new PgRecords(pool);
    this.index = new PgIndex(pool);
    this.searcher = new PgSearch(pool, this.index);
  }

  async lastTurnAt(agent: string): Promise<number | null> {
    return (await this.pool.query(`SELECT MAX(createdat) AS t FROM memorysignal WHERE agent = $1`, [agent])).rows[0].t ?? null;
  }

  async agentsWithMemory(): Promise<string[]> {
    return (await this.pool.query(`SELECT agent FROM memoryepisode UNION SELECT agent FROM memoryfact UNION SELECT agent FROM memorytranscript UNION SELECT agent FROM memorysignal`)).rows.map((r) => r.agent);
  }

  async switchChat(agent: string, conversationId: string): Promise<string | null> {
    for (;;) {
      const up = await this.pool.query(SWITCH_CHAT, [agent, conversationId]);
      if (up.rowCount) return up.rows[0].prev;
      const ins = await this.pool.query(`INSERT INTO memorychat (agent, conversationid) VALUES ($1, $2) ON CONFLICT (agent) DO NOTHING`, [agent, conversationId]);
      if (ins.rowCount) return null; // the agent's first; else another replica inserted it meanwhile
    }
  }

  consolidation<T>(fn: (t: ConsolidationTx) => Maybe<T>): Promise<T> {
    return tx(this.pool, async (c) => fn(pgConsolidationTx(c)));
  }

  purgeRecords(agent: string): Promise<Record<string, number>> {
    return tx(this.pool, async (c) => {
      const out: Record<string, number> = {};
      for (const t of MEMORY_TABLES) out[t.replace("memory", "")] = (await c.query(`DELETE FROM ${t} WHERE agent = $1`, [agent])).rowCount ?? 0;
      await c.query(`DELETE FROM memoryjob WHERE kind = 'distill' AND agent = $1 AND holder IS NULL`, [agent]);
      await c.query(`DELETE FROM memorychat WHERE agent = $1`, [agent]);
      return out;
    });
  }

  /** Work on memory's connections gets a few seconds to finish; what is still busy then is ended
   * (and named in a warning), so a stop never waits on it for ever. */
  async close(): Promise<void> {
    await this.conns.close((m) => this.log.warn(m)).catch(() => undefined);
  }
}

export async function openPgMemory(url: string, log: Logger, clock: () => Clock, closeWaitMs?: number): Promise<{ backend: PgMemory; sched: PgScheduler }> {
  const conns = memoryPool(url, closeWaitMs);
  const pool = conns.pool;
  try {
    const vector = (await pool.query(`SELECT 1 FROM pg_available_extensions WHERE name = 'vector'`)).rowCount! > 0;
    log.info(vector ? "memory: pgvector is available but not used yet; vectors are scored in this process" : "memory: on PostgreSQL (no pgvector: vectors are scored in this process)");
    return { backend: new PgMemory(conns, vector, log), sched: new PgScheduler(pool, clock) };
  } catch (e) {
    await conns.close((m) => log.warn(m)).catch(() => undefined);
    throw e;
  }
}
