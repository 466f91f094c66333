// Memory's index and search in the shared PostgreSQL. Lexical: one memorysearch row per record
// (its words as a tsvector, GIN index), every query filtered by agent, ranked with BM25 computed
// in SQL from the tsvectors over the agent's rows only (as with a table per agent on SQLite,
// another agent's material never moves a score), mapped to 0..1 as on SQLite. Vectors: memoryvector rows
// (bytes) read per query and scored in this process, as on SQLite (pgvector is not used yet).
// The ranking itself is search.ts's, so both stores order hits the same way.
import type pg from "pg";
import type { MemoryIndex, MemorySearcher } from "../backend";
import type { AgentVectors, LexHit } from "../index-store";
import { candidates, poolSize, rank, recOf, type Rec } from "../search";
import { KINDS, type Hit, type MemoryKind } from "../types";
import { episodeText } from "../store";
import { queryWords, rankScore, tsqueryOf } from "./lex";
import { putIndex } from "./records";
import { tx } from "./db";

const COLS: Record<MemoryKind, string> = {
  fact: `id, text, status, salience, createdat AS "createdAt"`,
  episode: `id, conversationid AS "conversationId", summary, topics, decisions, actionitems AS "actionItems", salience, createdat AS "createdAt"`,
  transcript: `id, conversationid AS "conversationId", usertext AS "userText", assistanttext AS "assistantText", createdat AS "createdAt"`,
};
const TABLE: Record<MemoryKind, string> = { fact: "memoryfact", episode: "memoryepisode", transcript: "memorytranscript" };
const RECENT: Record<MemoryKind, string> = {
  fact: `ORDER BY (status = 'pinned') DESC, salience DESC, id DESC`,
  episode: `ORDER BY createdat DESC, id DESC`,
  transcript: `ORDER BY createdat DESC, id DESC`,
};

const CORPUS_TTL_MS = 5_000;
const CACHE_FROM_ROWS = 1000;
// BM25 as FTS5 computes it (k1 = 1.2, b = 0.75, idf = ln((N - n + 0.5) / (n + 0.5)), at least
// 1e-6), over the agent's rows only: N and the mean length are the agent's ($3, $4), n counts the
// agent's matching rows holding the word (N is at least n: a cached N may lag behind other
// replicas' writes), a document's length is its number of distinct words. A word's frequency in
// a row is ts_rank_cd of that one word with every weight 1 (one cover per occurrence); that is
// several times cheaper than unnesting each matching tsvector.
const bm25Sql = (k: number) => {
  const w = Array.from({ length: k }, (_, i) => i);
  const term = (i: number) => `GREATEST(ln((GREATEST($3::float8, n${i}) - n${i} + 0.5) / (n${i} + 0.5)), 1e-6) * t${i} * 2.2 / (t${i} + 1.2 * (0.25 + 0.75 * dl / $4::float8))`;
  return `WITH m AS (SELECT kind, ref, length(tsv) AS dl, ${w.map((i) => `ts_rank_cd('{1,1,1,1}', tsv, $${7 + i}::tsquery, 0)::float8 AS t${i}`).join(", ")}
      FROM memorysearch WHERE agent = $1 AND tsv @@ $2::tsquery),
    d AS (SELECT m.*, ${w.map((i) => `(COUNT(*) FILTER (WHERE t${i} > 0) OVER ())::float8 AS n${i}`).join(", ")} FROM m)
    SELECT kind, ref, (${w.map((i) => `CASE WHEN t${i} > 0 THEN ${term(i)} ELSE 0 END`).join(" + ")})::float8 AS s
    FROM d WHERE kind = ANY($5::text[]) ORDER BY s DESC, ref DESC LIMIT $6`;
};
const BM25 = new Map<number, string>();

export class PgIndex implements MemoryIndex {
  private readonly stats_ = new Map<string, { n: number; avgdl: number; at: number }>();
  constructor(private readonly pool: pg.Pool) {}

  /** The GIN index finds the agent's rows holding any query word; they are ranked with BM25. */
  async lexical(agent: string, kinds: readonly MemoryKind[], q: string, limit: number): Promise<LexHit[]> {
    const words = queryWords(q);
    if (!words.length) return [];
    const st = await this.corpus(agent);
    if (!BM25.has(words.length)) BM25.set(words.length, bm25Sql(words.length));
    const r = await this.pool.query(BM25.get(words.length)!, [agent, tsqueryOf(words), st.n, st.avgdl, kinds, limit, ...words.map((w) => tsqueryOf([w]))]);
    return r.rows.map((x) => ({ kind: x.kind, ref: x.ref, score: rankScore(x.s) }));
  }

  /** The agent's row count and mean length for BM25. Read each time for a small namespace; a
   * large one's are cached briefly (they move slowly there, and only the scores of hits depend on
   * them, never which records match). */
  private async corpus(agent: string): Promise<{ n: number; avgdl: number }> {
    const c = this.stats_.get(agent);
    if (c && c.n >= CACHE_FROM_ROWS && Date.now() - c.at < CORPUS_TTL_MS) return c;
    const r = (await this.pool.query(`SELECT COUNT(*) AS n, COALESCE(AVG(length(tsv)), 1)::float8 AS avgdl FROM memorysearch WHERE agent = $1`, [agent])).rows[0];
    const v = { n: r.n as number, avgdl: Math.max(1, r.avgdl as number), at: Date.now() };
    this.stats_.set(agent, v);
    return v;
  }

  async putVector(agent: string, kind: MemoryKind, ref: number, model: string, v: Float32Array): Promise<void> {
    // only while the record exists: the vector comes after a background embedding call, and a
    // purge (or a prune) may have deleted the record meanwhile
    await this.pool.query(
      `INSERT INTO memoryvector (kind, ref, agent, model, vec) SELECT $1::text, $2::int, $3::text, $4::text, $5::bytea WHERE EXISTS (SELECT 1 FROM ${TABLE[kind]} WHERE id = $2::int AND agent = $3::text)
       ON CONFLICT (kind, ref) DO UPDATE SET agent = EXCLUDED.agent, model = EXCLUDED.model, vec = EXCLUDED.vec`,
      [kind, ref, agent, model, Buffer.from(v.buffer, v.byteOffset, v.byteLength)],
    );
  }

  /** The agent's vectors, read each time (another replica may have written some meanwhile). */
  async vectors(agent: string): Promise<AgentVectors | null> {
    const rows = (await this.pool.query(`SELECT kind, ref, model, vec FROM memoryvector WHERE agent = $1`, [agent])).rows as Array<{ kind: MemoryKind; ref: number; model: string; vec: Buffer }>;
    if (!rows.length) return null;
    return {
      model: rows[0].model,
      kinds: rows.map((r) => r.kind),
      refs: rows.map((r) => r.ref),
      vecs: rows.map((r) => new Float32Array(r.vec.buffer.slice(r.vec.byteOffset, r.vec.byteOffset + r.vec.byteLength))),
    };
  }

  async stats(agent: string): Promise<Record<string, number>> {
    const out: Record<string, number> = { fact: 0, episode: 0, transcript: 0 };
    for (const r of (await this.pool.query(`SELECT kind, COUNT(*) AS n FROM memorysearch WHERE agent = $1 GROUP BY kind`, [agent])).rows) out[r.kind] = r.n;
    out.vectors = (await this.pool.query(`SELECT COUNT(*) AS n FROM memoryvector WHERE agent = $1`, [agent])).rows[0].n;
    return out;
  }

  async remove(agent: string): Promise<{ lexical: number; vectors: number }> {
    return tx(this.pool, async (c) => ({
      lexical: (await c.query(`DELETE FROM memorysearch WHERE agent = $1`, [agent])).rowCount ?? 0,
      vectors: (await c.query(`DELETE FROM memoryvector WHERE agent = $1`, [agent])).rowCount ?? 0,
    }));
  }

  async rebuild(agent: string): Promise<Record<MemoryKind, number>> {
    const texts = await this.texts(agent);
    return tx(this.pool, async (c) => {
      await c.query(`DELETE FROM memorysearch WHERE agent = $1`, [agent]);
      const n = { fact: 0, episode: 0, transcript: 0 };
      for (const x of texts) {
        await putIndex(c, agent, x.kind, x.ref, x.text);
        n[x.kind]++;
      }
      return n;
    });
  }

  async texts(agent: string): Promise<Array<{ kind: MemoryKind; ref: number; text: string }>> {
    const out: Array<{ kind: MemoryKind; ref: number; text: string }> = [];
    for (const r of (await this.pool.query(`SELECT id, text FROM memoryfact WHERE agent = $1 ORDER BY id`, [agent])).rows) out.push({ kind: "fact", ref: r.id, text: r.text });
    for (const r of (await this.pool.query(`SELECT ${COLS.episode} FROM memoryepisode WHERE agent = $1 ORDER BY id`, [agent])).rows) {
      out.push({ kind: "episode", ref: r.id, text: episodeText({ summary: r.summary, topics: JSON.parse(r.topics), decisions: JSON.parse(r.decisions), action_items: JSON.parse(r.actionItems) }) });
    }
    for (const r of (await this.pool.query(`SELECT id, usertext, assistanttext FROM memorytranscript WHERE agent = $1 ORDER BY id`, [agent])).rows) out.push({ kind: "transcript", ref: r.id, text: `${r.usertext}\n${r.assistanttext}` });
    return out;
  }
}

export class PgSearch implements MemorySearcher {
  constructor(private readonly pool: pg.Pool, private readonly index: PgIndex) {}

  /** Records of the agent by kind and id (a stale or foreign index row finds none). */
  private async records(agent: string, want: Map<MemoryKind, number[]>): Promise<Map<string, Rec>> {
    const out = new Map<string, Rec>();
    await Promise.all([...want].map(async ([kind, ids]) => {
      if (!ids.length) return;
      const r = await this.pool.query(`SELECT ${COLS[kind]} FROM ${TABLE[kind]} WHERE agent = $1 AND id = ANY($2::int[])`, [agent, ids]);
      for (const row of r.rows) out.set(`${kind}:${row.id}`, recOf(kind, row));
    }));
    return out;
  }

  async search(agent: string, kinds: readonly MemoryKind[], q: string, limit: number, queryVec?: Float32Array | null): Promise<Hit[]> {
    if (!q.trim()) return this.recent(agent, kinds, limit);
    const pool = poolSize(limit);
    const [lex, vs] = await Promise.all([this.index.lexical(agent, kinds, q, pool), queryVec ? this.index.vectors(agent) : null]);
    const cands = candidates(lex, vs, queryVec, kinds, pool);
    const want = new Map<MemoryKind, number[]>(KINDS.map((k) => [k, []]));
    for (const c of cands.values()) want.get(c.kind)!.push(c.id);
    const recs = await this.records(agent, want);
    return rank(cands.values(), (c) => recs.get(`${c.kind}:${c.id}`), limit);
  }

  private async recent(agent: string, kinds: readonly MemoryKind[], limit: number): Promise<Hit[]> {
    const out: Hit[] = [];
    for (const k of kinds) {
      for (const row of (await this.pool.query(`SELECT ${COLS[k]} FROM ${TABLE[k]} WHERE agent = $1 ${RECENT[k]} LIMIT $2`, [agent, limit])).rows) {
        const r = recOf(k, row);
        out.push({ kind: k, id: row.id, text: r.text, score: 0, lexical: 0, vector: null, salience: r.salience, status: r.status, conversationId: r.conversationId, createdAt: r.createdAt });
      }
    }
    return out.slice(0, limit);
  }
}
