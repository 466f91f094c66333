// PostgreSQL full-text search tokenized the way the embedded FTS5 index is (unicode61,
// remove_diacritics 2): words are runs of letters and digits, lower-cased, diacritics removed.
// svc builds the tsvector text itself (words with their positions) rather than running
// to_tsvector, so the words do not depend on the database's locale or text search parser, and
// a query word matches exactly the words FTS5 would match.
import { headOf, words } from "../text";

const MAX_POS = 16383; // PostgreSQL's largest tsvector position
const MAX_POSITIONS = 256; // and the most positions one lexeme keeps

const fold = (s: string) => s.normalize("NFKD").replace(/\p{M}+/gu, "").toLowerCase();

/** The tsvector literal of a record's text: `'word':1,4 'other':2` (words hold no quote). */
export function tsvectorOf(text: string): string {
  const at = new Map<string, number[]>();
  let pos = 0;
  for (const m of fold(text).matchAll(/[\p{L}\p{N}]+/gu)) {
    pos = Math.min(pos + 1, MAX_POS);
    // a word longer than MAX_TERM is indexed by its first MAX_TERM characters, and a query
    // word likewise (queryWords), so a search for a long token finds it (FTS5: a prefix query)
    const w = headOf(m[0]);
    const ps = at.get(w);
    if (!ps) at.set(w, [pos]);
    else if (ps.length < MAX_POSITIONS) ps.push(pos);
  }
  return [...at].map(([w, ps]) => `'${w}':${ps.join(",")}`).join(" ");
}

/** The words of a query as the index holds them (stop words dropped, as ftsAny does). */
export function queryWords(q: string, max = 24): string[] {
  return [...new Set(words(q).map(fold).flatMap((w) => w.match(/[\p{L}\p{N}]+/gu) ?? []).map(headOf))].slice(0, max);
}

/** A tsquery matching any of the words. */
export const tsqueryOf = (words: string[]) => words.map((w) => `'${w}'`).join(" | ");

/** BM25 mapped to 0..1 the way SQLite's search maps FTS5's (x / (1 + x)). */
export const rankScore = (r: number) => (r > 0 ? r / (1 + r) : 0);
