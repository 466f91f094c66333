// Memory on the shared PostgreSQL (SVC_DATABASE_URL): records, index, search and consolidation
// (this folder) with the scheduler of jobs and leases (jobs.ts). The tables come with the store's
// migrations (prisma/postgres/migrations), applied before the engines start.
import type pg from "pg";
import type { Logger } from "../../host";
import type { MemoryBackend } from "../backend";
import type { MemorySettings } from "../config";
import type { ConsolidationReport } from "../consolidate";
import { memoryPool, tx } from "./db";
import { PgRecords } from "./records";
import { PgIndex, PgSearch } from "./search";
import { pgConsolidate } from "./consolidate";
import { PgScheduler } from "./jobs";
import type { Clock } from "../clock";

const MEMORY_TABLES = ["memorysignal", "memorytranscript", "memoryepisode", "memoryfact", "memoryentity", "memoryidentity", "memorydeadletter"];

export class PgMemory implements MemoryBackend {
  readonly dialect = "postgresql" as const;
  readonly store: PgRecords;
  readonly index: PgIndex;
  readonly searcher: PgSearch;

  constructor(readonly pool: pg.Pool, /** the server offers pgvector (not used yet: vectors are scored in process) */ readonly pgvector: boolean) {
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

  consolidateAgent(agent: string, s: MemorySettings, now: number, since: number | null, idle: boolean): Promise<ConsolidationReport> {
    return pgConsolidate(this.pool, agent, s, now, since, idle);
  }

  purgeRecords(agent: string): Promise<Record<string, number>> {
    return tx(this.pool, async (c) => {
      const out: Record<string, number> = {};
      for (const t of MEMORY_TABLES) out[t.replace("memory", "")] = (await c.query(`DELETE FROM ${t} WHERE agent = $1`, [agent])).rowCount ?? 0;
      await c.query(`DELETE FROM memoryjob WHERE kind = 'distill' AND agent = $1 AND holder IS NULL`, [agent]);
      return out;
    });
  }

  async close(): Promise<void> {
    await this.pool.end().catch(() => undefined);
  }
}

export async function openPgMemory(url: string, log: Logger, clock: () => Clock): Promise<{ backend: PgMemory; sched: PgScheduler }> {
  const pool = memoryPool(url);
  try {
    const vector = (await pool.query(`SELECT 1 FROM pg_available_extensions WHERE name = 'vector'`)).rowCount! > 0;
    log.info(vector ? "memory: pgvector is available but not used yet; vectors are scored in this process" : "memory: on PostgreSQL (no pgvector: vectors are scored in this process)");
    return { backend: new PgMemory(pool, vector), sched: new PgScheduler(pool, clock) };
  } catch (e) {
    await pool.end().catch(() => undefined);
    throw e;
  }
}
