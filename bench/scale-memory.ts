// Memory search on the two stores (part of `npm run bench scale`): the same namespace of N facts
// (random common words, with the answers of bench/memory.ts's question set among them) in the
// embedded SQLite file (FTS5 table per agent) and in PostgreSQL (tsvector rows, GIN index, BM25 in SQL), and
// the same queries through each backend's searcher (lexical: no embedding model), p50/p99 and
// recall@5. The engine layer alone, as in `npm run bench memory`: no HTTP, no gateway.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { openDb } from "../prisma/client";
import { migratePg } from "../engines/store/pg-migrate";
import { SqliteMemory } from "../engines/memory/sqlite-backend";
import { openPgMemory } from "../engines/memory/pg/open";
import { systemClock } from "../engines/memory/clock";
import { tsvectorOf } from "../engines/memory/pg/lex";
import { KINDS } from "../engines/memory/types";
import type { MemorySearcher } from "../engines/memory/backend";
import { percentile } from "./report";
import { QA, WORDS } from "./memory";

export interface MemorySearchFigures {
  facts: number;
  queries: number;
  sqlite: { p50: number; p99: number; recallAt5: number };
  postgresql: { p50: number; p99: number; recallAt5: number; pgvector: boolean };
}

/** The facts: N - |QA| filler sentences plus the answers spread among them. */
function factTexts(n: number): string[] {
  let seed = 42;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
  const out: string[] = [];
  const every = Math.floor(n / QA.length);
  for (let i = 0; out.length < n; i++) {
    const k = 6 + Math.floor(rnd() * 8);
    out.push(Array.from({ length: k }, () => WORDS[Math.floor(rnd() * WORDS.length)]).join(" ") + ".");
    if (i % every === 0 && i / every < QA.length) out.push(QA[i / every][1]);
  }
  return out;
}

async function measure(search: MemorySearcher, qs: string[]): Promise<{ p50: number; p99: number; recallAt5: number }> {
  for (const q of qs.slice(0, 20)) await search.search("big", KINDS, q, 10); // warm-up
  const t: number[] = [];
  for (const q of qs) {
    const a = performance.now();
    await search.search("big", KINDS, q, 10);
    t.push(performance.now() - a);
  }
  let hit = 0;
  for (const [q, answer] of QA) if ((await search.search("big", ["fact"], q, 5)).some((h) => h.text === answer)) hit++;
  return { p50: percentile(t, 50), p99: percentile(t, 99), recallAt5: hit / QA.length };
}

export async function memorySearchOnStores(pgUrl: string, opts: { facts?: number; queries?: number } = {}): Promise<MemorySearchFigures> {
  const N = opts.facts ?? Number(process.env.BENCH_MEMORY_FACTS ?? 20_000);
  const Q = opts.queries ?? 400;
  const texts = factTexts(N);
  const qs = Array.from({ length: Q }, (_, i) => (i % 2 ? QA[i % QA.length][0] : `${WORDS[i % WORDS.length]} ${WORDS[(i * 7) % WORDS.length]} ${WORDS[(i * 13) % WORDS.length]}`));
  const home = mkdtempSync(path.join(os.tmpdir(), "svc-bench-scale-memory-"));
  const db = await openDb(path.join(home, "svc.db"), { backgroundCheckpoints: false });
  let pgm: Awaited<ReturnType<typeof openPgMemory>> | undefined;
  try {
    // SQLite: records and the agent's FTS5 table, as the store writes them
    const lite = new SqliteMemory(db.sqlite);
    const ins = db.sqlite.prepare(`INSERT INTO MemoryFact (agent, text, norm, status, support, salience, createdAt, updatedAt) VALUES ('big', ?, ?, 'pinned', 1, 0.5, 0, 0)`);
    db.sqlite.transaction(() => texts.forEach((t, i) => lite.index.put("big", "fact", Number(ins.run(t, `${t.toLowerCase()}#${i}`).lastInsertRowid), t)))();
    // PostgreSQL: the same rows and their tsvectors, in batches
    await migratePg(pgUrl);
    pgm = await openPgMemory(pgUrl, { info: () => {}, warn: () => {}, error: () => {} }, () => systemClock);
    const pool = pgm.backend.pool;
    await pool.query(`DELETE FROM memoryfact WHERE agent = 'big'`);
    await pool.query(`DELETE FROM memorysearch WHERE agent = 'big'`);
    for (let i = 0; i < texts.length; i += 2000) {
      const part = texts.slice(i, i + 2000);
      await pool.query(
        `WITH f AS (INSERT INTO memoryfact (agent, text, norm, status, support, salience, createdat, updatedat)
           SELECT 'big', t, n, 'pinned', 1, 0.5, 0, 0 FROM unnest($1::text[], $2::text[]) AS x (t, n) RETURNING id, norm)
         INSERT INTO memorysearch (kind, ref, agent, tsv) SELECT 'fact', f.id, 'big', v.tsv::tsvector FROM f JOIN unnest($2::text[], $3::text[]) AS v (n, tsv) ON v.n = f.norm`,
        [part, part.map((t, j) => `${t.toLowerCase()}#${i + j}`), part.map(tsvectorOf)],
      );
    }
    await pool.query(`ANALYZE memorysearch`);
    const sqlite = await measure(lite.searcher, qs);
    const postgresql = { ...(await measure(pgm.backend.searcher, qs)), pgvector: pgm.backend.pgvector };
    return { facts: texts.length, queries: Q, sqlite, postgresql };
  } finally {
    await pgm?.sched.close();
    await pgm?.backend.close();
    await db.close();
    rmSync(home, { recursive: true, force: true });
  }
}
