// Consolidation's reads and writes on the shared PostgreSQL, inside the transaction of
// PgMemory.consolidation (its steps are consolidate.ts's, shared with SQLite). The caller holds
// the agent's consolidation lease (pg/jobs.ts), so one replica at a time consolidates an agent.
import type { ConsolidationSnapshot, ConsolidationTx, ConsolidationWrites } from "../backend";
import { putIndex } from "./records";
import type { Q } from "./db";

const TABLE = { episode: "memoryepisode", fact: "memoryfact", transcript: "memorytranscript" } as const;

export function pgConsolidationTx(c: Q): ConsolidationTx {
  return {
    async snapshot(agent: string, window: number, before: number): Promise<ConsolidationSnapshot> {
      const rows = async (sql: string, args: unknown[]) => (await c.query(sql, args)).rows;
      return {
        episodes: await rows(`SELECT id, salience, createdat AS "createdAt", sessiondate AS "sessionDate" FROM memoryepisode WHERE agent = $1`, [agent]),
        recent: await rows(
          `SELECT id, summary, topics, decisions, actionitems AS "actionItems", salience, mergedcount AS "mergedCount", createdat AS "createdAt" FROM memoryepisode WHERE agent = $1 ORDER BY createdat DESC, id DESC LIMIT $2`,
          [agent, window],
        ),
        candidates: await rows(`SELECT id, salience, createdat AS "createdAt", support FROM memoryfact WHERE agent = $1 AND status = 'candidate'`, [agent]),
        oldTranscript: (await rows(`SELECT id FROM memorytranscript WHERE agent = $1 AND createdat < $2`, [agent, before])).map((r) => r.id),
      };
    },

    async write(agent: string, w: ConsolidationWrites): Promise<number> {
      const setSalience = (table: string, v: Array<[number, number]>) =>
        v.length ? c.query(`UPDATE ${table} AS t SET salience = v.s FROM unnest($1::int[], $2::float8[]) AS v (id, s) WHERE t.id = v.id`, [v.map((x) => x[0]), v.map((x) => x[1])]) : null;
      await setSalience("memoryepisode", w.salience.episode);
      await setSalience("memoryfact", w.salience.fact);
      for (const e of w.merged) {
        await c.query(`UPDATE memoryepisode SET topics = $1, decisions = $2, actionitems = $3, salience = $4, mergedcount = $5, updatedat = $6 WHERE id = $7`, [e.topics, e.decisions, e.actionItems, e.salience, e.mergedCount, w.now, e.id]);
        await putIndex(c, agent, "episode", e.id, e.text);
      }
      if (w.pin.length) await c.query(`UPDATE memoryfact SET status = 'pinned', updatedat = $2 WHERE id = ANY($1::int[])`, [w.pin, w.now]);
      for (const kind of ["episode", "fact", "transcript"] as const) {
        const ids = w.remove[kind];
        if (!ids.length) continue;
        await c.query(`DELETE FROM ${TABLE[kind]} WHERE id = ANY($1::int[])`, [ids]);
        await c.query(`DELETE FROM memorysearch WHERE kind = $1 AND ref = ANY($2::int[])`, [kind, ids]);
        await c.query(`DELETE FROM memoryvector WHERE kind = $1 AND ref = ANY($2::int[])`, [kind, ids]);
      }
      return (await c.query(`DELETE FROM memorysignal WHERE agent = $1 AND status = 'distilled' AND createdat < $2`, [agent, w.signalsBefore])).rowCount ?? 0;
    },
  };
}
