// Memory benchmark: recall latency at 100k facts in one agent's namespace (search alone, and the
// whole budgeted recall an agent run gets), ingest throughput over HTTP (buffered turns, serial
// and concurrent), and recall@5 of a small question set whose answers hide among the filler
// facts. Lexical recall (no embedding model configured). Reported, not asserted.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startSvc, jsonLogger } from "../boot/start";
import { table, ms, percentile, type Section } from "./report";
import { embeddedMemory } from "../engines/memory/engine";

export const WORDS = (
  "time person year way day thing man world life hand part child eye woman place work week case point government company number group problem fact " +
  "water room mother area money story month lot right study book job word business issue side kind head house service friend father power hour game " +
  "line end member law car city community name president team minute idea kid body information back parent face others level office door health art " +
  "war history party result change morning reason research girl guy moment air teacher force education food garden music phone window river train"
).split(" ");

/** The questions and the one fact each should find (filler shares their common words). */
export const QA: Array<[string, string]> = [
  ["What is my sister's name?", "The user's sister is called Margot."],
  ["Which programming language do I prefer?", "The user prefers Rust for systems programming."],
  ["When is my dentist appointment?", "The user's dentist appointment is on March 3rd."],
  ["What allergy do I have?", "The user is allergic to peanuts."],
  ["Where did I grow up?", "The user grew up in Lisbon, Portugal."],
  ["What is my cat called?", "The user's cat is named Biscuit."],
  ["Which team do I support?", "The user supports the Boston Celtics basketball team."],
  ["What car do I drive?", "The user drives a green Volvo estate car."],
  ["What is my favourite book?", "The user's favourite book is Middlemarch by George Eliot."],
  ["What instrument do I play?", "The user plays the cello in a community orchestra."],
  ["Where do I work?", "The user works at a robotics startup called Kinetix."],
  ["What is my wifi password hint?", "The wifi password hint is the name of the first dog."],
  ["What time do I wake up?", "The user wakes up at 5:30 every morning to run."],
  ["Which city am I moving to?", "The user is moving to Montreal next summer."],
  ["What is my blood type?", "The user's blood type is O negative."],
  ["What diet do I follow?", "The user follows a vegetarian diet and avoids fish."],
  ["What did I name my boat?", "The user's sailing boat is named Petrichor."],
  ["What language am I learning?", "The user is learning Japanese with a tutor on Tuesdays."],
  ["Who is my manager?", "The user's manager is Priya Raman."],
  ["What is my daughter's school?", "The user's daughter attends Hillcrest Elementary school."],
];

export async function memoryBench(opts: { facts?: number; queries?: number; ingests?: number } = {}): Promise<Section> {
  const N = opts.facts ?? 100_000;
  const Q = opts.queries ?? 400;
  const I = opts.ingests ?? 1000;
  const home = mkdtempSync(path.join(os.tmpdir(), "svc-bench-memory-"));
  const s = await startSvc({ home, host: "127.0.0.1", port: 0, quickstart: false, resyncMs: 0, log: jsonLogger({ write: () => {} }) });
  try {
    await s.svc.store.write([
      { op: "upsert", kind: "MemoryConfig", name: "memory", owner: "config:bench", spec: { extractionModel: "bench-model", summaryDebounceSeconds: 3600 } },
      { op: "upsert", kind: "Agent", name: "big", owner: "config:bench", spec: { defaultModel: "bench-model", memory: true } },
      { op: "upsert", kind: "Agent", name: "writer", owner: "config:bench", spec: { defaultModel: "bench-model", memory: true } },
    ]);
    const mem = embeddedMemory(s.svc.engines.memory!);
    const db = s.svc.db.sqlite;

    // 1. fill one namespace with N facts (random common words) plus the answers
    let seed = 42;
    let seq = 0;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
    const f0 = performance.now();
    const ins = db.prepare(`INSERT INTO MemoryFact (agent, text, norm, status, support, salience, createdAt, updatedAt) VALUES ('big', ?, ?, 'pinned', 1, 0.5, 0, 0)`);
    db.transaction(() => {
      const put = (text: string) => mem.index.put("big", "fact", Number(ins.run(text, `${text.toLowerCase()}#${++seq}`).lastInsertRowid), text);
      for (let i = 0; i < N - QA.length; i++) {
        const n = 6 + Math.floor(rnd() * 8);
        put(Array.from({ length: n }, () => WORDS[Math.floor(rnd() * WORDS.length)]).join(" ") + ".");
        if (i % Math.floor(N / QA.length) === 0) put(QA[(i / Math.floor(N / QA.length)) % QA.length][1]);
      }
    })();
    const fillMs = performance.now() - f0;
    const facts = (db.prepare(`SELECT COUNT(*) AS n FROM MemoryFact WHERE agent = 'big'`).get() as { n: number }).n;

    // 2. recall latency: search alone, and the budgeted recall (800 tokens)
    const qs = Array.from({ length: Q }, (_, i) => (i % 2 ? QA[i % QA.length][0] : `${WORDS[i % WORDS.length]} ${WORDS[(i * 7) % WORDS.length]} ${WORDS[(i * 13) % WORDS.length]}`));
    const search: number[] = [];
    const recall: number[] = [];
    for (const q of qs) {
      const a = performance.now();
      await mem.search("big", ["fact", "episode", "transcript"], q, 10);
      search.push(performance.now() - a);
      const b = performance.now();
      await mem.recall("big", q, "bench-model");
      recall.push(performance.now() - b);
    }

    // 3. recall@5 on the question set
    let hit = 0;
    const misses: string[] = [];
    for (const [q, answer] of QA) {
      const top = await mem.search("big", ["fact"], q, 5);
      if (top.some((h) => h.text === answer)) hit++;
      else misses.push(q);
    }

    // 4. ingest throughput over HTTP (buffered turns), serial then 16 at a time
    const ingest = (i: number) =>
      fetch(`${s.url}/memory/ingest`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ agent_id: "writer", conversation_id: "bench", turns: [{ user: `turn ${i} about ${WORDS[i % WORDS.length]}`, assistant: "ok" }] }) }).then(async (r) => {
        const j = (await r.json()) as { outcome: string };
        if (j.outcome !== "buffered") throw new Error(`ingest ${i}: ${JSON.stringify(j)}`);
      });
    // baseline: the same HTTP stack answering POST /memory/flush with nothing pending
    const h0 = performance.now();
    for (let i = 0; i < 200; i++) await fetch(`${s.url}/memory/flush`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"agent_id":"writer","conversation_id":"none"}' }).then((r) => r.text());
    const baselineMs = (performance.now() - h0) / 200;
    const s0 = performance.now();
    for (let i = 0; i < I / 2; i++) await ingest(i);
    const serialMs = performance.now() - s0;
    const c0 = performance.now();
    let next = I / 2;
    await Promise.all(Array.from({ length: 16 }, async () => {
      while (next < I) await ingest(next++);
    }));
    const concMs = performance.now() - c0;

    const data = {
      facts,
      fillMs,
      searchMs: { p50: percentile(search, 50), p99: percentile(search, 99) },
      recallMs: { p50: percentile(recall, 50), p99: percentile(recall, 99) },
      recallAt5: hit / QA.length,
      misses,
      ingestPerSecond: { serial: I / 2 / (serialMs / 1000), concurrent16: I / 2 / (concMs / 1000) },
      httpBaselineMs: baselineMs,
    };
    const body = [
      table(
        ["measure", "p50", "p99"],
        [
          [`search, ${facts.toLocaleString("en")} facts in the namespace, top 10`, ms(data.searchMs.p50), ms(data.searchMs.p99)],
          ["recall for an agent run (search + identity + 800-token budget)", ms(data.recallMs.p50), ms(data.recallMs.p99)],
        ],
      ),
      "",
      table(
        ["ingest (HTTP, buffered turns)", "turns/s", "ms per call"],
        [
          ["serial", data.ingestPerSecond.serial.toFixed(0), ms(1000 / data.ingestPerSecond.serial)],
          ["16 concurrent", data.ingestPerSecond.concurrent16.toFixed(0), ms(1000 / data.ingestPerSecond.concurrent16)],
          ["baseline: POST /memory/flush with nothing pending (serial)", (1000 / baselineMs).toFixed(0), ms(baselineMs)],
        ],
      ),
      "",
      `recall@5 on ${QA.length} questions whose answers hide among the filler: **${(data.recallAt5 * 100).toFixed(0)}%**${misses.length ? ` (missed: ${misses.join("; ")})` : ""}.`,
      "",
      `Lexical recall (FTS5 BM25, one table per agent); no embedding model configured. Filling the namespace took ${(fillMs / 1000).toFixed(1)} s. ` +
        "Each ingest stores a transcript row, indexes it and writes a pending signal (one SQLite transaction).",
    ].join("\n");
    return { title: "Memory", body, data };
  } finally {
    await s.stop();
    rmSync(home, { recursive: true, force: true });
  }
}
