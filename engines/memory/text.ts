// Small text helpers shared by the store, recall and consolidation.
import { createHash, randomBytes } from "node:crypto";

export const newId = (p: string) => `${p}_${randomBytes(10).toString("hex")}`;

const STOP = new Set(
  "a an and are as at be by do does did for from has have had he her his i in is it its me my of on or our she so that the their them they this to was we were what when where which who why will with you your".split(" "),
);

/** Longest word a query keeps whole (pg/lex.ts indexes at most this many characters of a word). */
export const MAX_TERM = 64;

/** Lower-case words (letters and digits, any script), stop words dropped, any length. */
export function words(s: string): string[] {
  const out: string[] = [];
  // U+0130 (İ) lower-cases to "i" + a combining dot, which the word pattern would split off as
  // "i" (a stop word) and the rest; FTS5 folds it to a plain "i" (unicode61, remove_diacritics)
  for (const m of s.replace(/\u0130/g, "I").toLowerCase().matchAll(/[\p{L}\p{N}]+/gu)) if (!STOP.has(m[0])) out.push(m[0]);
  return out;
}

/** Lower-case words (letters and digits, any script), stop words dropped. */
export function terms(s: string): string[] {
  return words(s).filter((w) => w.length <= MAX_TERM);
}

/** The first MAX_TERM characters (code points) of a word. */
export const headOf = (w: string) => (w.length <= MAX_TERM ? w : [...w].slice(0, MAX_TERM).join(""));

/** An FTS5 query that matches any of the words (each quoted, so no word is read as syntax). A
 * word longer than MAX_TERM (a token, a hash) is matched by its first MAX_TERM characters as a
 * prefix, as PostgreSQL's index holds it (pg/lex.ts); it used to be dropped, so a search for it
 * found nothing although FTS5 indexes it whole. */
export function ftsAny(q: string, max = 24): string | null {
  const t = [...new Set(words(q))].slice(0, max);
  return t.length ? t.map((w) => (w.length <= MAX_TERM ? `"${w}"` : `"${headOf(w)}"*`)).join(" OR ") : null;
}

/** A fact's identity for de-duplication: its words in order, lower case (long words too: two
 * facts differing only in a long token are two facts). */
export const normFact = (s: string) => words(s).join(" ");

export const turnHash = (user: string, assistant: string) => createHash("sha256").update(user).update("\u0000").update(assistant).digest("hex").slice(0, 32);


export function jaccard(a: string, b: string): number {
  const A = new Set(terms(a));
  const B = new Set(terms(b));
  if (!A.size && !B.size) return 1;
  let inter = 0;
  for (const w of A) if (B.has(w)) inter++;
  return inter / (A.size + B.size - inter);
}

export function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0, na = 0, nb = 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return na && nb ? dot / Math.sqrt(na * nb) : 0;
}
