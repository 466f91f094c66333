// The memory engine's storage behind one interface, so engine.ts has one skeleton for both stores:
// the embedded SQLite file (store.ts, index-store.ts, search.ts, sqlite-backend.ts: synchronous
// better-sqlite3 calls) and PostgreSQL when replicas share a store (pg/*.ts:
// asynchronous). Methods may answer a value or a promise (`Maybe`); the engine awaits both, and
// the SQLite side keeps answering synchronously (its callers and tests read it so).
import type { SavedExtraction, TurnInput } from "./store";
import type { DeadLetter, Extraction, Hit, MemoryKind, RunRecord, SignalRow, TurnSource } from "./types";

export type Maybe<T> = T | Promise<T>;

/** f applied to v: at once when v is a value (the embedded store, whose timers tests drive
 * synchronously with a ManualClock), after it resolves when it is a promise. */
export function after<T, R>(v: Maybe<T>, f: (t: T) => Maybe<R>): Maybe<R> {
  return v instanceof Promise ? v.then(f) : f(v);
}

export interface PendingSession {
  agent: string;
  conversationId: string;
  source: TurnSource;
  last: number;
}

/** The records: transcript, signals, episodes, facts, entities, identity, dead letters, runs. */
export interface MemoryRecords {
  /** null: this exact turn of this conversation is already stored (idempotent ingest) */
  addTurn(t: TurnInput): Maybe<{ transcriptId: number; signalId: number | null } | null>;
  pending(agent: string, conversationId: string): Maybe<SignalRow[]>;
  pendingSessions(): Maybe<PendingSession[]>;
  pendingIn(agent: string, conversationId: string): Maybe<number>;
  pendingCount(agent: string): Maybe<number>;
  setSignals(ids: number[], status: string, attempts: number): Maybe<void>;
  saveExtraction(agent: string, conversationId: string, x: Extraction, signals: SignalRow[], now: number): Maybe<SavedExtraction>;
  addDeadLetter(d: DeadLetter): Maybe<void>;
  deadLetters(agent: string | undefined, limit?: number): Maybe<DeadLetter[]>;
  deadLetter(id: string): Maybe<DeadLetter | undefined>;
  requeueDead(d: DeadLetter, now: number): Maybe<void>;
  addRun(r: RunRecord): Maybe<void>;
  runs(agent: string | undefined, type: string | undefined, limit?: number): Maybe<RunRecord[]>;
  identity(agent: string): Maybe<Array<{ key: string; value: string; updatedAt: number }>>;
  entities(agent: string, limit?: number): Maybe<Array<{ name: string; type: string | null; description: string | null; mentions: number; updatedAt: number }>>;
  counts(agent: string): Maybe<Record<string, number>>;
}

/** The search index (lexical rows and vectors) of each agent; it holds nothing the records do not. */
export interface MemoryIndex {
  putVector(agent: string, kind: MemoryKind, ref: number, model: string, v: Float32Array): Maybe<void>;
  /** index rows per kind, plus `vectors` */
  stats(agent: string): Maybe<Record<string, number>>;
  /** drop the agent's index (lexical rows and vectors); the records stay */
  remove(agent: string): Maybe<{ lexical: number; vectors: number }>;
  /** refill the agent's lexical index from its own records only */
  rebuild(agent: string): Maybe<Record<MemoryKind, number>>;
  /** every record's index text (what to embed) */
  texts(agent: string): Maybe<Array<{ kind: MemoryKind; ref: number; text: string }>>;
}

export interface MemorySearcher {
  search(agent: string, kinds: readonly MemoryKind[], q: string, limit: number, queryVec?: Float32Array | null): Maybe<Hit[]>;
}

// Consolidation's storage calls: its steps (consolidate.ts) read one snapshot and write once, in
// one transaction of the store.

/** An episode as merging reads it (topics, decisions, actionItems: JSON arrays). */
export interface EpisodeRow {
  id: number;
  summary: string;
  topics: string;
  decisions: string;
  actionItems: string;
  salience: number;
  mergedCount: number;
  createdAt: number;
}

/** What consolidation reads of an agent, at the start of its transaction. */
export interface ConsolidationSnapshot {
  /** every episode of the agent (sessionDate: the ingest's session_date, which dates it for retention) */
  episodes: Array<{ id: number; salience: number; createdAt: number; sessionDate?: string | null }>;
  /** the agent's MERGE_WINDOW most recent episodes, whole */
  recent: EpisodeRow[];
  /** the agent's candidate facts */
  candidates: Array<{ id: number; salience: number; createdAt: number; support: number }>;
  /** ids of the agent's transcript turns created before the retention limit */
  oldTranscript: number[];
}

/** What consolidation writes, applied in this order by the store. */
export interface ConsolidationWrites {
  now: number;
  /** decayed salience by id */
  salience: { episode: Array<[number, number]>; fact: Array<[number, number]> };
  /** episodes other episodes merged into: their new lists, salience and count (updatedAt = now),
   * and their new index text */
  merged: Array<Omit<EpisodeRow, "summary" | "createdAt"> & { text: string }>;
  /** candidate facts that become pinned (updatedAt = now) */
  pin: number[];
  /** records deleted, with their index rows and vectors */
  remove: { episode: number[]; fact: number[]; transcript: number[] };
  /** distilled signals created before this are deleted */
  signalsBefore: number;
}

/** A store's side of consolidation: one snapshot read and one write, in the same transaction. */
export interface ConsolidationTx {
  snapshot(agent: string, window: number, before: number): Maybe<ConsolidationSnapshot>;
  /** answers how many distilled signals it deleted */
  write(agent: string, w: ConsolidationWrites): Maybe<number>;
}

/** The store runs fn in one transaction (synchronously on SQLite: fn's calls answer values). */
export interface ConsolidationStore {
  consolidation<T>(fn: (t: ConsolidationTx) => Maybe<T>): Maybe<T>;
}

/** What the engine asks of a store besides records, index and search; consolidation's steps
 * (consolidate.ts) run over its snapshot and write calls (ConsolidationStore). */
export interface MemoryBackend extends ConsolidationStore {
  readonly dialect: "sqlite" | "postgresql";
  readonly store: MemoryRecords;
  readonly index: MemoryIndex;
  readonly searcher: MemorySearcher;
  /** when the agent's latest turn was buffered (epoch ms), null without any */
  lastTurnAt(agent: string): Maybe<number | null>;
  /** a direct-chat turn (not delegated work) of `conversationId`: it becomes the agent's current
   * conversation (for the cluster, when shared); answers the one it replaces, null without any */
  switchChat(agent: string, conversationId: string): Maybe<string | null>;
  agentsWithMemory(): Maybe<string[]>;
  /** every record of the agent, and its current conversation */
  purgeRecords(agent: string): Maybe<Record<string, number>>;
  close(): Promise<void>;
}

/** Events a scheduler hands back to the engine. */
export interface SchedulerHost {
  /** a session's debounce (or retry delay) ran out: distill it */
  due(agent: string, conversationId: string, trigger: string): void;
  /** the consolidation interval ran out: consolidate every agent */
  consolidationDue(): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
}

/**
 * When distillation and consolidation run. Embedded (scheduler.ts): timers of this process, as
 * before. Shared (pg/jobs.ts): rows in PostgreSQL that exactly one replica takes when due (FOR
 * UPDATE SKIP LOCKED), and a lease per session or agent so one replica at a time works on it.
 */
export interface MemoryScheduler {
  readonly shared: boolean;
  start(host: SchedulerHost): void;
  /** (re)start a session's timer: the debounce, or a retry after a failed extraction */
  arm(agent: string, conversationId: string, ms: number, trigger: string): Maybe<void>;
  /** drop a session's timer (it is being distilled now) */
  disarm(agent: string, conversationId: string): Maybe<void>;
  /** arm the sessions that have no timer yet (left pending by a previous process, or waiting for a model) */
  armMissing(sessions: PendingSession[], ms: number): Maybe<void>;
  /** is this session's timer set? (embedded: exact; shared: what this replica armed) */
  armed(agent: string, conversationId: string): boolean;
  /** drop the timers of an agent (purge) */
  disarmAgent(agent: string): Maybe<void>;
  /** the consolidation interval (re-armed when it changes) */
  consolidateEvery(ms: number): Maybe<void>;
  /** run fn while holding `what` (a session being distilled, an agent being consolidated): one
   * holder at a time in this process, and across replicas when shared */
  exclusive<T>(what: "distill" | "consolidate", agent: string, conversationId: string, fn: () => Maybe<T>): Maybe<T>;
  /** drop this process's timers (a clock swap in tests); stored work stays */
  reset(): void;
  close(): Promise<void>;
}
