// consolidate.ts's five steps (decay, merge, promote, evict, prune) on the shared PostgreSQL, in
// one transaction. The caller holds the agent's consolidation lease (pg/jobs.ts), so one replica
// at a time consolidates an agent.
import type pg from "pg";
import type { MemorySettings } from "../config";
import { HALF_LIFE_DAYS, MERGE_SIMILARITY, PROMOTE_SUPPORT, type ConsolidationReport } from "../consolidate";
import { episodeText } from "../store";
import { jaccard } from "../text";
import { putIndex } from "./records";
import { tx, type Q } from "./db";

const DAY = 86_400_000;
const MERGE_WINDOW = 2000;

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

const dropIndex = (c: Q, kind: string, ids: number[]) =>
  ids.length ? Promise.all([c.query(`DELETE FROM memorysearch WHERE kind = $1 AND ref = ANY($2::int[])`, [kind, ids]), c.query(`DELETE FROM memoryvector WHERE kind = $1 AND ref = ANY($2::int[])`, [kind, ids])]) : null;

/** Delete rows of `table` by id (and their index entries); returns the ids. */
async function del(c: Q, table: string, kind: string, ids: number[]): Promise<number[]> {
  if (!ids.length) return ids;
  await c.query(`DELETE FROM ${table} WHERE id = ANY($1::int[])`, [ids]);
  await dropIndex(c, kind, ids);
  return ids;
}

export function pgConsolidate(pool: pg.Pool, agent: string, s: MemorySettings, now: number, since: number | null, idle: boolean): Promise<ConsolidationReport> {
  return tx(pool, async (c) => {
    const rep: ConsolidationReport = { decay: { episodes: 0, facts: 0, since: since ?? 0 }, merge: [], promote: [], evict: { idle, episodes: [], facts: [] }, prune: { episodes: 0, transcript: 0, signals: 0, before: now - s.episodeRetentionDays * DAY } };
    // decay
    const factor = (created: number) => Math.pow(0.5, Math.max(0, now - Math.max(Number(created), since ?? 0)) / (HALF_LIFE_DAYS * DAY));
    for (const [table, where, key] of [["memoryepisode", "", "episodes"], ["memoryfact", " AND status = 'candidate'", "facts"]] as const) {
      const ids: number[] = [];
      const sal: number[] = [];
      for (const r of (await c.query(`SELECT id, salience, createdat FROM ${table} WHERE agent = $1${where}`, [agent])).rows) {
        const f = factor(r.createdat);
        if (f < 1) (ids.push(r.id), sal.push(r.salience * f));
      }
      if (ids.length) await c.query(`UPDATE ${table} AS t SET salience = v.s FROM unnest($1::int[], $2::float8[]) AS v (id, s) WHERE t.id = v.id`, [ids, sal]);
      rep.decay[key] = ids.length;
    }
    // merge (oldest first: later near-duplicates fold into earlier ones)
    const eps = (await c.query(
      `SELECT id, summary, topics, decisions, actionitems AS "actionItems", salience, mergedcount AS "mergedCount", createdat AS "createdAt" FROM memoryepisode WHERE agent = $1 ORDER BY createdat DESC, id DESC LIMIT $2`,
      [agent, MERGE_WINDOW],
    )).rows.reverse() as Ep[];
    const gone = new Set<number>();
    const changed = new Set<Ep>();
    const keyText = (e: Ep) => `${e.summary} ${JSON.parse(e.topics).join(" ")}`;
    const u = (x: string, y: string) => JSON.stringify([...new Set([...JSON.parse(x), ...JSON.parse(y)])]);
    for (let i = 0; i < eps.length; i++) {
      const a = eps[i];
      if (gone.has(a.id)) continue;
      for (let j = i + 1; j < eps.length; j++) {
        const b = eps[j];
        if (gone.has(b.id)) continue;
        const sim = jaccard(keyText(a), keyText(b));
        if (sim < MERGE_SIMILARITY) continue;
        a.topics = u(a.topics, b.topics);
        a.decisions = u(a.decisions, b.decisions);
        a.actionItems = u(a.actionItems, b.actionItems);
        a.salience = Math.max(a.salience, b.salience);
        a.mergedCount += b.mergedCount;
        changed.add(a);
        gone.add(b.id);
        rep.merge.push({ into: a.id, merged: b.id, similarity: Math.round(sim * 1000) / 1000 });
      }
    }
    for (const a of changed) {
      await c.query(`UPDATE memoryepisode SET topics = $1, decisions = $2, actionitems = $3, salience = $4, mergedcount = $5, updatedat = $6 WHERE id = $7`, [a.topics, a.decisions, a.actionItems, a.salience, a.mergedCount, now, a.id]);
      await putIndex(c, agent, "episode", a.id, episodeText({ summary: a.summary, topics: JSON.parse(a.topics), decisions: JSON.parse(a.decisions), action_items: JSON.parse(a.actionItems) }));
    }
    await del(c, "memoryepisode", "episode", [...gone]);
    // promote
    rep.promote = (await c.query(`UPDATE memoryfact SET status = 'pinned', updatedat = $3 WHERE agent = $1 AND status = 'candidate' AND support >= $2 RETURNING id`, [agent, PROMOTE_SUPPORT, now])).rows.map((r) => r.id).sort((a, b) => a - b);
    // evict (idle only)
    if (idle) {
      rep.evict.episodes = await del(c, "memoryepisode", "episode", (await c.query(`SELECT id FROM memoryepisode WHERE agent = $1 AND salience < $2 ORDER BY id`, [agent, s.salienceFloor])).rows.map((r) => r.id));
      rep.evict.facts = await del(c, "memoryfact", "fact", (await c.query(`SELECT id FROM memoryfact WHERE agent = $1 AND status = 'candidate' AND salience < $2 ORDER BY id`, [agent, s.salienceFloor])).rows.map((r) => r.id));
    }
    // prune by retention
    const before = rep.prune.before;
    rep.prune.episodes = (await del(c, "memoryepisode", "episode", (await c.query(`SELECT id FROM memoryepisode WHERE agent = $1 AND createdat < $2`, [agent, before])).rows.map((r) => r.id))).length;
    rep.prune.transcript = (await del(c, "memorytranscript", "transcript", (await c.query(`SELECT id FROM memorytranscript WHERE agent = $1 AND createdat < $2`, [agent, before])).rows.map((r) => r.id))).length;
    rep.prune.signals = (await c.query(`DELETE FROM memorysignal WHERE agent = $1 AND status = 'distilled' AND createdat < $2`, [agent, before])).rowCount ?? 0;
    return rep;
  });
}
