// Hybrid search over one agent's memory: BM25 from FTS5 (0..1) and, when the agent's material has
// embeddings and the query could be embedded, cosine similarity, combined as
//   base = 0.6 * lexical + 0.4 * max(0, cosine)     (lexical alone without vectors)
//   score = base * (0.6 + 0.4 * salience)            (transcript turns count salience 0.5)
// plus 0.1 for pinned facts. Every candidate is re-read from its record and checked to belong to
// the agent, so a stale index row never surfaces another agent's (or a deleted) record.
// The ranking (candidates, score) is shared with PostgreSQL's search (pg/search.ts).
import type Database from "better-sqlite3";
import type { Hit, MemoryKind } from "./types";
import type { AgentVectors, IndexStore, LexHit } from "./index-store";
import { cosine } from "./text";
import { episodeText } from "./store";

export interface Rec {
  text: string;
  salience: number | null;
  status?: string;
  conversationId?: string;
  createdAt: number;
}

export class MemorySearch {
  private readonly s: Record<string, Database.Statement>;

  constructor(db: Database.Database, private readonly index: IndexStore) {
    const p = (sql: string) => db.prepare(sql);
    this.s = {
      fact: p(`SELECT id, agent, text, status, salience, support, createdAt FROM MemoryFact WHERE id = ?`),
      episode: p(`SELECT id, agent, conversationId, summary, topics, decisions, actionItems, salience, createdAt FROM MemoryEpisode WHERE id = ?`),
      transcript: p(`SELECT id, agent, conversationId, userText, assistantText, createdAt FROM MemoryTranscript WHERE id = ?`),
      recentFact: p(`SELECT id FROM MemoryFact WHERE agent = ? ORDER BY (status = 'pinned') DESC, salience DESC, id DESC LIMIT ?`),
      recentEpisode: p(`SELECT id FROM MemoryEpisode WHERE agent = ? ORDER BY createdAt DESC, id DESC LIMIT ?`),
      recentTranscript: p(`SELECT id FROM MemoryTranscript WHERE agent = ? ORDER BY createdAt DESC, id DESC LIMIT ?`),
    };
  }

  /** The record behind an index entry, if it exists and belongs to the agent. */
  record(agent: string, kind: MemoryKind, id: number): Rec | undefined {
    const r = this.s[kind].get(id) as any;
    if (!r || r.agent !== agent) return undefined;
    return recOf(kind, r);
  }

  search(agent: string, kinds: readonly MemoryKind[], q: string, limit: number, queryVec?: Float32Array | null): Hit[] {
    if (!q.trim()) return this.recent(agent, kinds, limit);
    const pool = poolSize(limit);
    const cands = candidates(this.index.lexical(agent, kinds, q, pool), queryVec ? this.index.vectors(agent) : null, queryVec, kinds, pool);
    return rank(cands.values(), (c) => this.record(agent, c.kind, c.id), limit);
  }

  /** Without a query: the most relevant material by standing (pinned, salient, recent). */
  private recent(agent: string, kinds: readonly MemoryKind[], limit: number): Hit[] {
    const out: Hit[] = [];
    const stmt = { fact: this.s.recentFact, episode: this.s.recentEpisode, transcript: this.s.recentTranscript };
    for (const k of kinds) {
      for (const { id } of stmt[k].all(agent, limit) as Array<{ id: number }>) {
        const r = this.record(agent, k, id)!;
        out.push({ kind: k, id, text: r.text, score: 0, lexical: 0, vector: null, salience: r.salience, status: r.status, conversationId: r.conversationId, createdAt: r.createdAt });
      }
    }
    return out.slice(0, limit);
  }
}

/** A record row (camel-case columns) as search reads it. */
export function recOf(kind: MemoryKind, r: any): Rec {
  if (kind === "fact") return { text: r.text, salience: r.salience, status: r.status, createdAt: Number(r.createdAt) };
  if (kind === "episode") {
    const text = episodeText({ summary: r.summary, topics: JSON.parse(r.topics), decisions: JSON.parse(r.decisions), action_items: JSON.parse(r.actionItems) });
    return { text, salience: r.salience, conversationId: r.conversationId, createdAt: Number(r.createdAt) };
  }
  return { text: `User: ${r.userText}\nAssistant: ${r.assistantText}`, salience: null, conversationId: r.conversationId, createdAt: Number(r.createdAt) };
}

export interface Candidate {
  kind: MemoryKind;
  id: number;
  lex: number;
  vec: number | null;
}

/** How many lexical and vector candidates a search of `limit` hits considers. */
export const poolSize = (limit: number) => Math.max(limit * 4, 40);

/** Candidates: the top lexical hits, and with vectors the top cosine hits; every candidate gets
 * its cosine (0 when it has no vector) once the agent has vectors and the query one. */
export function candidates(lex: LexHit[], vs: AgentVectors | null, queryVec: Float32Array | null | undefined, kinds: readonly MemoryKind[], pool: number): Map<string, Candidate> {
  const cands = new Map<string, Candidate>();
  for (const h of lex) cands.set(`${h.kind}:${h.ref}`, { kind: h.kind, id: h.ref, lex: h.score, vec: null });
  if (vs && queryVec) {
    const scored: Array<{ kind: MemoryKind; id: number; c: number }> = [];
    // a vector of another length was made by another embedding model (MemoryConfig changed):
    // comparing it with the query's (over the shorter length) gives a meaningless cosine, so it
    // is left out until the index is rebuilt, and its record is found lexically
    for (let i = 0; i < vs.refs.length; i++) if (kinds.includes(vs.kinds[i]) && vs.vecs[i].length === queryVec.length) scored.push({ kind: vs.kinds[i], id: vs.refs[i], c: cosine(queryVec, vs.vecs[i]) });
    scored.sort((a, b) => b.c - a.c);
    const byKey = new Map(scored.map((s) => [`${s.kind}:${s.id}`, s.c]));
    for (const s of scored.slice(0, pool)) if (!cands.has(`${s.kind}:${s.id}`)) cands.set(`${s.kind}:${s.id}`, { kind: s.kind, id: s.id, lex: 0, vec: s.c });
    for (const [k, c] of cands) c.vec = byKey.get(k) ?? 0;
  }
  return cands;
}

/** Score candidates against their records (a candidate without one is dropped), best first. */
export function rank(cands: Iterable<Candidate>, record: (c: Candidate) => Rec | undefined, limit: number): Hit[] {
  const hits: Hit[] = [];
  for (const c of cands) {
    const r = record(c);
    if (!r) continue;
    const base = c.vec === null ? c.lex : 0.6 * c.lex + 0.4 * Math.max(0, c.vec);
    const score = base * (0.6 + 0.4 * (r.salience ?? 0.5)) + (r.status === "pinned" ? 0.1 : 0);
    hits.push({ kind: c.kind, id: c.id, text: r.text, score, lexical: c.lex, vector: c.vec, salience: r.salience, status: r.status, conversationId: r.conversationId, createdAt: r.createdAt });
  }
  hits.sort((a, b) => b.score - a.score || b.id - a.id);
  return hits.slice(0, limit);
}
