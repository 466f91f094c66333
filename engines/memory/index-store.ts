// The search index of memory: one FTS5 table per agent (lexical, BM25) and MemoryVector
// (embeddings). A table per agent keeps each namespace apart in every respect: a query reads only
// that agent's table, BM25's corpus statistics are the agent's own (another agent's material never
// moves a score), removal is a DROP TABLE and a rebuild refills one table. Tables are named from a
// hash of the agent and listed in MemoryIndexTable. The FTS rowid encodes (kind, record id), so a
// record is replaced or dropped without a scan. The index holds nothing the records do not.
import { createHash } from "node:crypto";
import type Database from "better-sqlite3";
import type { MemoryKind } from "./types";
import { KINDS } from "./types";
import { ftsAny } from "./text";

const CODE: Record<MemoryKind, number> = { fact: 1, episode: 2, transcript: 3 };
const rowid = (kind: MemoryKind, ref: number) => ref * 4 + CODE[kind];
const tableOf = (agent: string) => "MemoryFts_" + createHash("sha256").update(agent).digest("hex").slice(0, 24);

export interface LexHit {
  kind: MemoryKind;
  ref: number;
  /** BM25 mapped to 0..1 (higher is better) */
  score: number;
}

export interface AgentVectors {
  model: string;
  kinds: MemoryKind[];
  refs: number[];
  vecs: Float32Array[];
}

interface Table {
  put: Database.Statement;
  del: Database.Statement;
  search: Database.Statement;
  count: Database.Statement;
}

export class IndexStore {
  private readonly s: Record<string, Database.Statement>;
  private readonly tables = new Map<string, Table | null>();
  private readonly vecCache = new Map<string, AgentVectors | null>();

  constructor(readonly db: Database.Database) {
    const p = (sql: string) => db.prepare(sql);
    this.s = {
      reg: p(`INSERT OR IGNORE INTO MemoryIndexTable (agent, tableName, createdAt) VALUES (?, ?, ?)`),
      unreg: p(`DELETE FROM MemoryIndexTable WHERE agent = ?`),
      known: p(`SELECT tableName FROM MemoryIndexTable WHERE agent = ?`),
      // only while the record exists: vectors are written in the background, after the embedding
      // call, and a purge (or a prune) may have deleted the record meanwhile
      putVec_fact: p(`INSERT OR REPLACE INTO MemoryVector (kind, ref, agent, model, vec) SELECT ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM MemoryFact WHERE id = ? AND agent = ?)`),
      putVec_episode: p(`INSERT OR REPLACE INTO MemoryVector (kind, ref, agent, model, vec) SELECT ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM MemoryEpisode WHERE id = ? AND agent = ?)`),
      putVec_transcript: p(`INSERT OR REPLACE INTO MemoryVector (kind, ref, agent, model, vec) SELECT ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM MemoryTranscript WHERE id = ? AND agent = ?)`),
      delVec: p(`DELETE FROM MemoryVector WHERE kind = ? AND ref = ?`),
      dropVec: p(`DELETE FROM MemoryVector WHERE agent = ?`),
      vecs: p(`SELECT kind, ref, model, vec FROM MemoryVector WHERE agent = ?`),
      countVec: p(`SELECT COUNT(*) AS n FROM MemoryVector WHERE agent = ?`),
      facts: p(`SELECT id, text FROM MemoryFact WHERE agent = ?`),
      episodes: p(`SELECT id, summary, topics, decisions, actionItems FROM MemoryEpisode WHERE agent = ?`),
      transcript: p(`SELECT id, userText, assistantText FROM MemoryTranscript WHERE agent = ?`),
    };
  }

  /** The agent's table (created when `create`), or null when it has none. */
  private table(agent: string, create: boolean): Table | null {
    const cached = this.tables.get(agent);
    if (cached || (cached === null && !create)) return cached;
    const name = tableOf(agent);
    if (!this.s.known.get(agent)) {
      if (!create) {
        this.tables.set(agent, null);
        return null;
      }
      // `kind` is an indexed column so a kind filter is part of the MATCH; bm25 weighs it 0
      this.db.exec(`CREATE VIRTUAL TABLE IF NOT EXISTS "${name}" USING fts5(content, kind, ref UNINDEXED, tokenize = 'unicode61 remove_diacritics 2')`);
      this.s.reg.run(agent, name, Date.now());
    }
    const t: Table = {
      put: this.db.prepare(`INSERT INTO "${name}" (rowid, content, kind, ref) VALUES (?, ?, ?, ?)`),
      del: this.db.prepare(`DELETE FROM "${name}" WHERE rowid = ?`),
      search: this.db.prepare(`SELECT kind, ref, bm25("${name}", 1.0, 0.0) AS r FROM "${name}" WHERE "${name}" MATCH ? ORDER BY r LIMIT ?`),
      count: this.db.prepare(`SELECT kind, COUNT(*) AS n FROM "${name}" GROUP BY kind`),
    };
    this.tables.set(agent, t);
    return t;
  }

  put(agent: string, kind: MemoryKind, ref: number, content: string): void {
    const t = this.table(agent, true)!;
    const id = rowid(kind, ref);
    t.del.run(id);
    t.put.run(id, content, kind, ref);
  }

  drop(agent: string, kind: MemoryKind, ref: number): void {
    this.table(agent, false)?.del.run(rowid(kind, ref));
    if (this.s.delVec.run(kind, ref).changes) this.vecCache.delete(agent);
  }

  /** Lexical search in the agent's own table, restricted to the given kinds. */
  lexical(agent: string, kinds: readonly MemoryKind[], q: string, limit: number): LexHit[] {
    const words = ftsAny(q);
    const t = words ? this.table(agent, false) : null;
    if (!t || !words) return [];
    const match = kinds.length === KINDS.length ? `content:(${words})` : `kind:(${kinds.join(" OR ")}) AND content:(${words})`;
    const rows = t.search.all(match, limit) as Array<{ kind: MemoryKind; ref: number; r: number }>;
    return rows.map((r) => ({ kind: r.kind, ref: Number(r.ref), score: -r.r / (1 - r.r) }));
  }

  putVector(agent: string, kind: MemoryKind, ref: number, model: string, v: Float32Array): void {
    if (this.s[`putVec_${kind}`].run(kind, ref, agent, model, Buffer.from(v.buffer, v.byteOffset, v.byteLength), ref, agent).changes) this.vecCache.delete(agent);
  }

  /** The agent's vectors (cached until the agent's index changes). */
  vectors(agent: string): AgentVectors | null {
    if (this.vecCache.has(agent)) return this.vecCache.get(agent)!;
    const rows = this.s.vecs.all(agent) as Array<{ kind: MemoryKind; ref: number; model: string; vec: Buffer }>;
    const out: AgentVectors | null = rows.length
      ? {
          model: rows[0].model,
          kinds: rows.map((r) => r.kind),
          refs: rows.map((r) => Number(r.ref)),
          vecs: rows.map((r) => new Float32Array(r.vec.buffer.slice(r.vec.byteOffset, r.vec.byteOffset + r.vec.byteLength))),
        }
      : null;
    this.vecCache.set(agent, out);
    return out;
  }

  /** Index rows of the agent, per kind, plus its vectors. */
  stats(agent: string): Record<string, number> {
    const out: Record<string, number> = { fact: 0, episode: 0, transcript: 0 };
    for (const r of (this.table(agent, false)?.count.all() ?? []) as Array<{ kind: string; n: number }>) out[r.kind] = r.n;
    out.vectors = (this.s.countVec.get(agent) as { n: number }).n;
    return out;
  }

  /** Drop the agent's index (its FTS table and its vectors); the records stay. */
  remove(agent: string): { lexical: number; vectors: number } {
    const st = this.stats(agent);
    return this.db.transaction(() => {
      if (this.s.known.get(agent)) this.db.exec(`DROP TABLE IF EXISTS "${tableOf(agent)}"`);
      this.s.unreg.run(agent);
      this.tables.delete(agent);
      const vectors = this.s.dropVec.run(agent).changes;
      this.vecCache.delete(agent);
      return { lexical: st.fact + st.episode + st.transcript, vectors };
    })();
  }

  /** Rebuild the agent's lexical index from its own records only (vectors: the engine re-embeds). */
  rebuild(agent: string): Record<MemoryKind, number> {
    return this.db.transaction(() => {
      if (this.s.known.get(agent)) this.db.exec(`DROP TABLE IF EXISTS "${tableOf(agent)}"`);
      this.s.unreg.run(agent);
      this.tables.delete(agent);
      const n = { fact: 0, episode: 0, transcript: 0 };
      for (const x of this.texts(agent)) {
        this.put(agent, x.kind, x.ref, x.text);
        n[x.kind]++;
      }
      return n;
    })();
  }

  /** What to embed for the agent: every record's index text. */
  texts(agent: string): Array<{ kind: MemoryKind; ref: number; text: string }> {
    const out: Array<{ kind: MemoryKind; ref: number; text: string }> = [];
    for (const r of this.s.facts.all(agent) as any[]) out.push({ kind: "fact", ref: r.id, text: r.text });
    for (const r of this.s.episodes.all(agent) as any[]) out.push({ kind: "episode", ref: r.id, text: episodeContent(r) });
    for (const r of this.s.transcript.all(agent) as any[]) out.push({ kind: "transcript", ref: r.id, text: `${r.userText}\n${r.assistantText}` });
    return out;
  }
}

function episodeContent(r: { summary: string; topics: string; decisions: string; actionItems: string }): string {
  const parts = [r.summary];
  const t = JSON.parse(r.topics) as string[];
  const d = JSON.parse(r.decisions) as string[];
  const a = JSON.parse(r.actionItems) as string[];
  if (t.length) parts.push(`Topics: ${t.join(", ")}`);
  if (d.length) parts.push(`Decisions: ${d.join("; ")}`);
  if (a.length) parts.push(`Action items: ${a.join("; ")}`);
  return parts.join("\n");
}
