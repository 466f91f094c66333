// The search index of memory: the FTS5 table MemoryFts (lexical, BM25) and MemoryVector
// (embeddings). Every row carries its agent and a namespace token per (agent, kind) that each
// MATCH requires, so a query is scoped to one agent before ranking. The FTS rowid encodes
// (kind, record id), so a record is replaced or dropped without a scan. The index holds nothing
// the records do not: remove() drops it, rebuild() restores it from the records of that agent.
import type Database from "better-sqlite3";
import type { MemoryKind } from "./types";
import { KINDS } from "./types";
import { ftsAny, nsToken } from "./text";

const CODE: Record<MemoryKind, number> = { fact: 1, episode: 2, transcript: 3 };
const rowid = (kind: MemoryKind, ref: number) => ref * 4 + CODE[kind];

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

export class IndexStore {
  private readonly s: Record<string, Database.Statement>;
  private readonly vecCache = new Map<string, AgentVectors | null>();

  constructor(readonly db: Database.Database) {
    const p = (sql: string) => db.prepare(sql);
    this.s = {
      put: p(`INSERT INTO MemoryFts (rowid, content, ns, agent, kind, ref) VALUES (?, ?, ?, ?, ?, ?)`),
      del: p(`DELETE FROM MemoryFts WHERE rowid = ?`),
      search: p(`SELECT kind, ref, bm25(MemoryFts) AS r FROM MemoryFts WHERE MemoryFts MATCH ? AND agent = ? ORDER BY r LIMIT ?`),
      dropNs: p(`DELETE FROM MemoryFts WHERE MemoryFts MATCH ?`),
      countNs: p(`SELECT COUNT(*) AS n FROM MemoryFts WHERE MemoryFts MATCH ? AND agent = ?`),
      putVec: p(`INSERT OR REPLACE INTO MemoryVector (kind, ref, agent, model, vec) VALUES (?, ?, ?, ?, ?)`),
      delVec: p(`DELETE FROM MemoryVector WHERE kind = ? AND ref = ?`),
      dropVec: p(`DELETE FROM MemoryVector WHERE agent = ?`),
      vecs: p(`SELECT kind, ref, model, vec FROM MemoryVector WHERE agent = ?`),
      countVec: p(`SELECT COUNT(*) AS n FROM MemoryVector WHERE agent = ?`),
      facts: p(`SELECT id, text FROM MemoryFact WHERE agent = ?`),
      episodes: p(`SELECT id, summary, topics, decisions, actionItems FROM MemoryEpisode WHERE agent = ?`),
      transcript: p(`SELECT id, userText, assistantText FROM MemoryTranscript WHERE agent = ?`),
    };
  }

  put(agent: string, kind: MemoryKind, ref: number, content: string): void {
    const id = rowid(kind, ref);
    this.s.del.run(id);
    this.s.put.run(id, content, nsToken(agent, kind), agent, kind, ref);
  }

  drop(agent: string, kind: MemoryKind, ref: number): void {
    this.s.del.run(rowid(kind, ref));
    if (this.s.delVec.run(kind, ref).changes) this.vecCache.delete(agent);
  }

  /** Lexical search within one agent's namespaces of the given kinds. */
  lexical(agent: string, kinds: readonly MemoryKind[], q: string, limit: number): LexHit[] {
    const words = ftsAny(q);
    if (!words) return [];
    const ns = kinds.map((k) => `ns:${nsToken(agent, k)}`).join(" OR ");
    const rows = this.s.search.all(`(${ns}) AND (${words})`, agent, limit) as Array<{ kind: MemoryKind; ref: number; r: number }>;
    return rows.map((r) => ({ kind: r.kind, ref: Number(r.ref), score: -r.r / (1 - r.r) }));
  }

  putVector(agent: string, kind: MemoryKind, ref: number, model: string, v: Float32Array): void {
    this.s.putVec.run(kind, ref, agent, model, Buffer.from(v.buffer, v.byteOffset, v.byteLength));
    this.vecCache.delete(agent);
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
    const out: Record<string, number> = {};
    for (const k of KINDS) out[k] = (this.s.countNs.get(`ns:${nsToken(agent, k)}`, agent) as { n: number }).n;
    out.vectors = (this.s.countVec.get(agent) as { n: number }).n;
    return out;
  }

  /** Drop the agent's index (FTS rows and vectors); the records stay. */
  remove(agent: string): { lexical: number; vectors: number } {
    return this.db.transaction(() => {
      let lexical = 0;
      for (const k of KINDS) lexical += this.s.dropNs.run(`ns:${nsToken(agent, k)}`).changes;
      const vectors = this.s.dropVec.run(agent).changes;
      this.vecCache.delete(agent);
      return { lexical, vectors };
    })();
  }

  /** Rebuild the agent's lexical index from its own records only (vectors: the engine re-embeds). */
  rebuild(agent: string): Record<MemoryKind, number> {
    return this.db.transaction(() => {
      for (const k of KINDS) this.s.dropNs.run(`ns:${nsToken(agent, k)}`);
      const n = { fact: 0, episode: 0, transcript: 0 };
      for (const r of this.s.facts.all(agent) as any[]) (this.put(agent, "fact", r.id, r.text), n.fact++);
      for (const r of this.s.episodes.all(agent) as any[]) {
        this.put(agent, "episode", r.id, episodeContent(r));
        n.episode++;
      }
      for (const r of this.s.transcript.all(agent) as any[]) (this.put(agent, "transcript", r.id, `${r.userText}\n${r.assistantText}`), n.transcript++);
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
