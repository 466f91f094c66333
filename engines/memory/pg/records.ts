// Memory records in the shared PostgreSQL (the lower-case tables of prisma/postgres/schema.prisma),
// the same operations and transactions as store.ts on SQLite. Every index row written beside a
// record goes into memorysearch (pg/search.ts) in the same statement or transaction.
import type pg from "pg";
import type { MemoryRecords, PendingSession } from "../backend";
import type { SavedExtraction, TurnInput } from "../store";
import { episodeText } from "../store";
import type { DeadLetter, Extraction, RunRecord, SignalRow } from "../types";
import { normFact, turnHash } from "../text";
import { tsvectorOf } from "./lex";
import { tx, type Q } from "./db";

const json = (v: unknown) => JSON.stringify(v ?? []);
const SIGNAL = `id, agent, conversationid AS "conversationId", source, usertext AS "userText", assistanttext AS "assistantText", sessiondate AS "sessionDate", project, attempts, createdat AS "createdAt"`;
const DEAD = `id, agent, conversationid AS "conversationId", reason, attempts, signalids AS "signalIds", createdat AS "createdAt", resolvedat AS "resolvedAt"`;
const RUN = `id, agent, type, trigger, startedat AS "startedAt", finishedat AS "finishedAt", result`;

// transcript, its index row and its pending signal in one statement (all or nothing)
const ADD_TURN = `WITH t AS (
    INSERT INTO memorytranscript (agent, conversationid, turnhash, usertext, assistanttext, sessiondate, source, createdat)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (agent, conversationid, turnhash) DO NOTHING RETURNING id),
  x AS (INSERT INTO memorysearch (kind, ref, agent, tsv) SELECT 'transcript', id, $1::text, $9::tsvector FROM t),
  g AS (INSERT INTO memorysignal (agent, conversationid, source, turnhash, usertext, assistanttext, sessiondate, project, status, attempts, createdat)
    SELECT $1::text, $2::text, $7::text, $3::text, $4::text, $5::text, $6::text, $10::text, 'pending', 0, $8::bigint FROM t WHERE $11::boolean RETURNING id)
  SELECT (SELECT id FROM t) AS tid, (SELECT id FROM g) AS sid`;

export const putIndex = (c: Q, agent: string, kind: string, ref: number, text: string) =>
  c.query(`INSERT INTO memorysearch (kind, ref, agent, tsv) VALUES ($1, $2, $3, $4::tsvector) ON CONFLICT (kind, ref) DO UPDATE SET agent = EXCLUDED.agent, tsv = EXCLUDED.tsv`, [kind, ref, agent, tsvectorOf(text)]);

export class PgRecords implements MemoryRecords {
  constructor(private readonly pool: pg.Pool) {}

  async addTurn(t: TurnInput): Promise<{ transcriptId: number; signalId: number | null } | null> {
    const h = turnHash(t.user, t.assistant);
    const r = await this.pool.query(ADD_TURN, [t.agent, t.conversationId, h, t.user, t.assistant, t.sessionDate ?? null, t.source, t.now, tsvectorOf(`${t.user}\n${t.assistant}`), t.project ?? null, t.signal]);
    const row = r.rows[0] as { tid: number | null; sid: number | null };
    return row.tid == null ? null : { transcriptId: row.tid, signalId: row.sid ?? null };
  }

  async pending(agent: string, conv: string): Promise<SignalRow[]> {
    return (await this.pool.query(`SELECT ${SIGNAL} FROM memorysignal WHERE agent = $1 AND conversationid = $2 AND status = 'pending' ORDER BY id`, [agent, conv])).rows;
  }

  async pendingSessions(): Promise<PendingSession[]> {
    return (await this.pool.query(`SELECT agent, conversationid AS "conversationId", MIN(source) AS source, MAX(createdat) AS last FROM memorysignal WHERE status = 'pending' GROUP BY agent, conversationid`)).rows;
  }

  async pendingIn(agent: string, conv: string): Promise<number> {
    return (await this.pool.query(`SELECT COUNT(*) AS n FROM memorysignal WHERE agent = $1 AND conversationid = $2 AND status = 'pending'`, [agent, conv])).rows[0].n;
  }

  async pendingCount(agent: string): Promise<number> {
    return (await this.pool.query(`SELECT COUNT(*) AS n FROM memorysignal WHERE agent = $1 AND status = 'pending'`, [agent])).rows[0].n;
  }

  /** A failed attempt: only signals still pending (a distilled one never comes back). */
  async setSignals(ids: number[], status: string, attempts: number): Promise<void> {
    await this.pool.query(`UPDATE memorysignal SET status = $2, attempts = $3 WHERE id = ANY($1::int[]) AND status = 'pending'`, [ids, status, attempts]);
  }

  /** One transaction; it claims the signals first (pending -> distilled) and gives up when any
   * of them is no longer pending, so one session's turns are never distilled twice. */
  async saveExtraction(agent: string, conv: string, x: Extraction, signals: SignalRow[], now: number): Promise<SavedExtraction> {
    return tx(this.pool, async (c) => {
      const claimed = await c.query(`UPDATE memorysignal SET status = 'distilled' WHERE id = ANY($1::int[]) AND status = 'pending'`, [signals.map((s) => s.id)]);
      if (claimed.rowCount !== signals.length) throw Object.assign(new Error("these turns were distilled elsewhere meanwhile"), { code: "already_distilled" });
      const e = x.episode;
      const first = signals[0];
      const ep = await c.query(
        `INSERT INTO memoryepisode (agent, conversationid, summary, topics, decisions, actionitems, entities, salience, sessiondate, project, mergedcount, createdat, updatedat)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 1, $11, $11) RETURNING id`,
        [agent, conv, e.summary, json(e.topics), json(e.decisions), json(e.action_items), json(x.entities.map((n) => n.name)), e.salience, first?.sessionDate ?? null, first?.project ?? null, now],
      );
      const episodeId = ep.rows[0].id as number;
      await putIndex(c, agent, "episode", episodeId, episodeText(e));
      const factsNew: number[] = [];
      const factsNewText: string[] = [];
      const factsSupported: number[] = [];
      // a fact the model repeats within one extraction is one session's support, not two
      const seen = new Set<string>();
      for (const f of x.facts) {
        const norm = normFact(f);
        if (!norm || seen.has(norm)) continue;
        seen.add(norm);
        const r = await c.query(
          `INSERT INTO memoryfact (agent, text, norm, status, support, salience, createdat, updatedat) VALUES ($1, $2, $3, 'candidate', 1, $4, $5, $5)
           ON CONFLICT (agent, norm) DO UPDATE SET support = memoryfact.support + 1, salience = GREATEST(memoryfact.salience, EXCLUDED.salience), updatedat = EXCLUDED.updatedat
           RETURNING id, (xmax = 0) AS inserted`,
          [agent, f.trim(), norm, e.salience, now],
        );
        const { id, inserted } = r.rows[0] as { id: number; inserted: boolean };
        if (inserted) {
          await putIndex(c, agent, "fact", id, f.trim());
          factsNew.push(id);
          factsNewText.push(f.trim());
        } else factsSupported.push(id);
      }
      for (const n of x.entities) {
        await c.query(
          `INSERT INTO memoryentity (agent, name, type, description, mentions, updatedat) VALUES ($1, $2, $3, $4, 1, $5)
           ON CONFLICT (agent, name) DO UPDATE SET mentions = memoryentity.mentions + 1, type = COALESCE(EXCLUDED.type, memoryentity.type), description = COALESCE(EXCLUDED.description, memoryentity.description), updatedat = EXCLUDED.updatedat`,
          [agent, n.name, n.type ?? null, n.description ?? null, now],
        );
      }
      for (const i of x.identity) {
        await c.query(`INSERT INTO memoryidentity (agent, key, value, updatedat) VALUES ($1, $2, $3, $4) ON CONFLICT (agent, key) DO UPDATE SET value = EXCLUDED.value, updatedat = EXCLUDED.updatedat`, [agent, i.key, i.value, now]);
      }
      return { episodeId, factsNew, factsNewText, factsSupported, entities: x.entities.length, identity: x.identity.length };
    });
  }

  async addDeadLetter(d: DeadLetter): Promise<void> {
    await tx(this.pool, async (c) => {
      await c.query(`INSERT INTO memorydeadletter (id, agent, conversationid, reason, attempts, signalids, createdat) VALUES ($1, $2, $3, $4, $5, $6, $7)`, [d.id, d.agent, d.conversationId, d.reason, d.attempts, JSON.stringify(d.signalIds), d.createdAt]);
      await c.query(`UPDATE memorysignal SET status = 'dead', attempts = $2 WHERE id = ANY($1::int[])`, [d.signalIds, d.attempts]);
    });
  }

  async deadLetters(agent: string | undefined, limit = 100): Promise<DeadLetter[]> {
    const r = agent
      ? await this.pool.query(`SELECT ${DEAD} FROM memorydeadletter WHERE agent = $1 ORDER BY createdat DESC, id LIMIT $2`, [agent, limit])
      : await this.pool.query(`SELECT ${DEAD} FROM memorydeadletter ORDER BY createdat DESC, id LIMIT $1`, [limit]);
    return r.rows.map(deadOf);
  }

  async deadLetter(id: string): Promise<DeadLetter | undefined> {
    const r = (await this.pool.query(`SELECT ${DEAD} FROM memorydeadletter WHERE id = $1`, [id])).rows[0];
    return r ? deadOf(r) : undefined;
  }

  async requeueDead(d: DeadLetter, now: number): Promise<void> {
    await tx(this.pool, async (c) => {
      await c.query(`UPDATE memorysignal SET status = 'pending', attempts = 0 WHERE id = ANY($1::int[])`, [d.signalIds]);
      await c.query(`UPDATE memorydeadletter SET resolvedat = $2 WHERE id = $1`, [d.id, now]);
    });
  }

  async addRun(r: RunRecord): Promise<void> {
    await this.pool.query(`INSERT INTO memoryrun (id, agent, type, trigger, startedat, finishedat, result) VALUES ($1, $2, $3, $4, $5, $6, $7)`, [r.id, r.agent, r.type, r.trigger, r.startedAt, r.finishedAt, JSON.stringify(r.result)]);
  }

  async runs(agent: string | undefined, type: string | undefined, limit = 50): Promise<RunRecord[]> {
    const r = await this.pool.query(
      `SELECT ${RUN} FROM memoryrun WHERE ($1::text IS NULL OR agent = $1) AND ($2::text IS NULL OR type = $2) ORDER BY startedat DESC, finishedat DESC NULLS LAST, id DESC LIMIT $3`,
      [agent ?? null, type ?? null, limit],
    );
    return r.rows.map((x) => ({ ...x, result: JSON.parse(x.result) }));
  }

  async identity(agent: string): Promise<Array<{ key: string; value: string; updatedAt: number }>> {
    return (await this.pool.query(`SELECT key, value, updatedat AS "updatedAt" FROM memoryidentity WHERE agent = $1 ORDER BY key`, [agent])).rows;
  }

  async entities(agent: string, limit = 50): Promise<Array<{ name: string; type: string | null; description: string | null; mentions: number; updatedAt: number }>> {
    return (await this.pool.query(`SELECT name, type, description, mentions, updatedat AS "updatedAt" FROM memoryentity WHERE agent = $1 ORDER BY mentions DESC, name LIMIT $2`, [agent, limit])).rows;
  }

  async counts(agent: string): Promise<Record<string, number>> {
    return (await this.pool.query(
      `SELECT (SELECT COUNT(*) FROM memoryfact WHERE agent = $1 AND status = 'pinned') AS pinned,
        (SELECT COUNT(*) FROM memoryfact WHERE agent = $1 AND status = 'candidate') AS candidates,
        (SELECT COUNT(*) FROM memoryepisode WHERE agent = $1) AS episodes,
        (SELECT COUNT(*) FROM memorytranscript WHERE agent = $1) AS transcript,
        (SELECT COUNT(*) FROM memorysignal WHERE agent = $1 AND status = 'pending') AS pending,
        (SELECT COUNT(*) FROM memorydeadletter WHERE agent = $1 AND resolvedat IS NULL) AS dead_letters,
        (SELECT COUNT(*) FROM memoryentity WHERE agent = $1) AS entities,
        (SELECT COUNT(*) FROM memoryidentity WHERE agent = $1) AS identity`,
      [agent],
    )).rows[0];
  }
}

function deadOf(r: any): DeadLetter {
  return { ...r, signalIds: JSON.parse(r.signalIds), resolvedAt: r.resolvedAt ?? null };
}
