// The memory engine: buffers agent-attributed turns as durable pending signals, distills each
// session with one extraction call when its debounce expires (restarted by every turn), when the
// agent's direct chat switches conversation, or on an explicit flush; recalls within a token
// budget; consolidates on an interval and on demand; removes, purges and rebuilds indexes.
// Time comes from an injectable Clock (tests advance a ManualClock instead of sleeping).
// Storage and scheduling sit behind backend.ts: the embedded SQLite file with this process's
// timers, or PostgreSQL with jobs and leases shared by every replica (pg/).
import type { MemoryHost } from "./gateway-calls";
import type { AgentSpec } from "../../schemas/kinds/agent";
import { systemClock, type Clock } from "./clock";
import { currentSettings, type MemorySettings } from "./config";
import { GatewayCalls } from "./gateway-calls";
import { Distiller } from "./distiller";
import { buildRecall, type RecallResult } from "./recall";
import { consolidateAgent, type ConsolidationReport } from "./consolidate";
import { after, type Maybe, type MemoryBackend, type MemoryScheduler } from "./backend";
import { SqliteMemory } from "./sqlite-backend";
import { LocalScheduler } from "./scheduler";
import { newId } from "./text";
import { KINDS, type Hit, type MemoryKind, type Outcome, type RunRecord, type Turn, type TurnSource } from "./types";
import { traceField, type Span } from "../telemetry";

export interface TurnRecord {
  agent: string;
  conversationId: string;
  source: TurnSource;
  user: string;
  assistant: string;
  sessionDate?: string;
  project?: string;
  /** transcript only, no distillation (ingest skip_extraction) */
  skipExtraction?: boolean;
  /** the span of the agent run's memory write (tracing on): the turn's embedding call is its child */
  trace?: Span;
}

export interface IngestResult {
  outcome: Outcome;
  turns: { received: number; stored: number; duplicate: number; empty: number };
  pending: number;
  distillation?: { episode_id: number; facts_new: number; facts_supported: number } | null;
}

/**
 * `B` types store, index and searcher. The default is either store's surface (calls may answer
 * promises: PostgreSQL's do), so svc's own code awaits every one of them; tests and
 * bench/memory.ts that build the embedded store read it as MemoryEngine<SqliteMemory>.
 */
export class MemoryEngine<B extends MemoryBackend = MemoryBackend> {
  clock: Clock;
  readonly store: B["store"];
  readonly index: B["index"];
  readonly searcher: B["searcher"];
  readonly calls: GatewayCalls;
  private readonly distiller: Distiller;
  private readonly work = new Set<Promise<unknown>>();
  private closed = false;

  /** Without a backend: the embedded SQLite file and this process's timers. */
  constructor(private readonly svc: MemoryHost, clock: Clock = systemClock, readonly backend: B = new SqliteMemory(svc.db.sqlite) as unknown as B, readonly sched: MemoryScheduler = new LocalScheduler(() => this.clock)) {
    this.clock = clock;
    this.store = backend.store;
    this.index = backend.index;
    this.searcher = backend.searcher;
    this.calls = new GatewayCalls(svc);
    this.distiller = new Distiller(this);
  }

  get log() {
    return this.svc.log;
  }

  settings(): MemorySettings {
    return currentSettings(this.svc.store);
  }

  /** Re-arm debounces of sessions a previous process left pending, and the consolidation timer. */
  start(): void {
    this.sched.start({
      due: (agent, conv, trigger) => void this.track(this.flush(agent, conv, trigger).catch((e) => this.log.warn("memory distillation could not run", { agent, err: String(e?.message ?? e) }))),
      consolidationDue: () => {
        this.track(this.consolidate(undefined, "interval").catch((e) => this.log.warn("memory consolidation failed", { err: String(e?.message ?? e) })));
        this.configure();
      },
      warn: (msg, fields) => this.log.warn(msg, fields),
    });
    this.configure();
  }

  /** Swap the clock (tests): pending timers are re-armed on the new one. */
  useClock(clock: Clock): void {
    this.sched.reset();
    this.clock = clock;
    this.configure();
  }

  /** Settings changed (MemoryConfig controller): re-arm the consolidation interval. */
  configure(): MemorySettings {
    const s = this.settings();
    if (this.closed) return s;
    // sessions left pending (a previous process, or waiting for an extraction model) get a timer
    const armed = after(after(this.store.pendingSessions(), (p) => this.sched.armMissing(p, s.summaryDebounceSeconds * 1000)), () => this.sched.consolidateEvery(s.consolidationIntervalHours * 3_600_000));
    if (armed instanceof Promise) this.track(armed.catch((e) => this.log.warn("memory could not re-arm its timers", { err: String(e?.message ?? e) })));
    return s;
  }

  /** Why an agent's turns are not remembered, or null when they are. */
  refusal(agent: string): string | null {
    if (!this.settings().enabled) return "memory_disabled";
    const o = this.svc.store.get("Agent", agent);
    if (!o || o.deleting) return "unknown_agent";
    if ((o.spec as AgentSpec).memory !== true) return "agent_memory_off";
    return null;
  }

  agentSpec(agent: string): AgentSpec | undefined {
    return this.svc.store.get("Agent", agent)?.spec as AgentSpec | undefined;
  }

  /** Buffer one turn. Direct chat switching conversation flushes the previous one. */
  recordTurn(t: TurnRecord): Promise<Outcome> {
    return this.track(this.bufferTurn(t));
  }

  private async bufferTurn(t: TurnRecord): Promise<Outcome> {
    const why = this.refusal(t.agent);
    if (why) return `skipped:${why}`;
    if (!t.user.trim() && !t.assistant.trim()) return "skipped:empty";
    const now = this.clock.now();
    const at = t.sessionDate && Number.isFinite(Date.parse(t.sessionDate)) ? Date.parse(t.sessionDate) : now;
    // SQLite writes here, synchronously, before anything is awaited
    const saved = await this.store.addTurn({ agent: t.agent, conversationId: t.conversationId, source: t.source, user: t.user, assistant: t.assistant, sessionDate: t.sessionDate ?? null, project: t.project ?? null, signal: !t.skipExtraction, now: at });
    if (!saved) return "skipped:duplicate";
    this.embedLater(t.agent, [{ kind: "transcript", ref: saved.transcriptId, text: `${t.user}\n${t.assistant}` }], t.trace);
    if (t.skipExtraction) return "skipped:skip_extraction";
    // the agent's current direct-chat conversation (delegated work never changes it): the
    // backend keeps it, for the cluster when shared, so a switch seen by any replica flushes
    if (t.source !== "delegated") {
      const prev = await this.backend.switchChat(t.agent, t.conversationId);
      if (prev != null && prev !== t.conversationId) this.track(this.flush(t.agent, prev, "conversation_switch"));
    }
    await this.debounce(t.agent, t.conversationId);
    return "buffered";
  }

  /** POST /memory/ingest: every turn of the call, one outcome. `flush` distills at once. */
  async ingest(b: { agent: string; conversationId: string; turns: Turn[]; sessionDate?: string; skipExtraction?: boolean; project?: string; flush?: boolean }): Promise<IngestResult> {
    const counts = { received: b.turns.length, stored: 0, duplicate: 0, empty: 0 };
    const base = async (outcome: Outcome): Promise<IngestResult> => ({ outcome, turns: counts, pending: await this.store.pendingIn(b.agent, b.conversationId) });
    const why = this.refusal(b.agent);
    if (why) return base(`skipped:${why}`);
    let last: Outcome | null = null;
    for (const t of b.turns) {
      const o = await this.recordTurn({ agent: b.agent, conversationId: b.conversationId, source: "ingest", user: t.user, assistant: t.assistant, sessionDate: b.sessionDate, project: b.project, skipExtraction: b.skipExtraction });
      if (o === "skipped:empty") counts.empty++;
      else if (o === "skipped:duplicate") counts.duplicate++;
      else {
        counts.stored++;
        last = o;
      }
    }
    if (!counts.stored) return base(counts.duplicate ? "skipped:duplicate" : "skipped:empty");
    if (b.skipExtraction) return base("skipped:skip_extraction");
    if (!this.distiller.modelFor(b.agent)) return base("failed:no_extraction_model");
    if (!b.flush) return base(last ?? "buffered");
    const r = await this.flush(b.agent, b.conversationId, "ingest");
    return { ...(await base(r.outcome)), distillation: r.saved ? { episode_id: r.saved.episodeId, facts_new: r.saved.factsNew.length, facts_supported: r.saved.factsSupported.length } : null };
  }

  /** (Re)start a session's timer: the debounce, or a retry after a failed extraction. */
  async debounce(agent: string, conv: string, ms = this.settings().summaryDebounceSeconds * 1000, trigger = "debounce"): Promise<void> {
    if (this.closed) return this.sched.disarm(agent, conv);
    await this.sched.arm(agent, conv, ms, trigger);
  }

  /** Distill a session now (cancels its debounce). */
  async flush(agent: string, conv: string, trigger: string) {
    await this.sched.disarm(agent, conv);
    return this.distiller.distill(agent, conv, trigger);
  }

  /** Flush every pending session of an agent (or one conversation). */
  async flushAgent(agent: string, conv?: string): Promise<Array<{ conversation_id: string; outcome: Outcome }>> {
    const sessions = conv ? [conv] : [...new Set((await this.store.pendingSessions()).filter((s) => s.agent === agent).map((s) => s.conversationId))];
    const out = [];
    for (const c of sessions) out.push({ conversation_id: c, outcome: (await this.flush(agent, c, "explicit")).outcome });
    return out;
  }

  /** Is a session waiting on its debounce? */
  isDebouncing(agent: string, conv: string): boolean {
    return this.sched.armed(agent, conv);
  }

  /** Put a dead letter's signals back and distill them again. */
  async retryDeadLetter(id: string) {
    const d = await this.store.deadLetter(id);
    if (!d) return undefined;
    await this.store.requeueDead(d, this.clock.now());
    return { dead_letter: id, ...(await this.flush(d.agent, d.conversationId, "dead_letter_retry")) };
  }

  /** The query embedding, or null (no embedding model, or it failed: lexical only). */
  async queryVector(q: string, trace?: Span): Promise<Float32Array | null> {
    const m = this.settings().embeddingModel;
    if (!m || !q.trim()) return null;
    try {
      return (await this.calls.embed(m, [q], trace))[0] ?? null;
    } catch (e: any) {
      this.log.warn("memory query embedding failed; lexical recall only", { err: String(e?.message ?? e), ...traceField(trace) });
      return null;
    }
  }

  async search(agent: string, kinds: readonly MemoryKind[], q: string, limit = 10, trace?: Span): Promise<Hit[]> {
    return this.searcher.search(agent, kinds, q, limit, await this.queryVector(q, trace));
  }

  /** The memory system message of an agent run, within memoryBudgetTokens of `model`. */
  async recall(agent: string, query: string, model: string, trace?: Span): Promise<RecallResult> {
    const s = this.settings();
    const hits = await this.search(agent, KINDS, query, 30, trace);
    return buildRecall(await this.store.identity(agent), hits, s.memoryBudgetTokens, this.calls.counter(model));
  }

  /** Consolidate one agent or all; each agent's run is recorded. On the embedded store this
   * runs to the end synchronously (as it always did: the interval's runs, fired back to back by a
   * ManualClock, each see the previous one), so it chains values with `after`, not `await`. */
  consolidate(agent: string | undefined, trigger: string): Promise<RunRecord[]> {
    try {
      const s = this.settings();
      const out: RunRecord[] = [];
      const all = after(agent ? [agent] : this.backend.agentsWithMemory(), (agents) => {
        let chain: Maybe<unknown> = undefined;
        for (const a of agents) chain = after(chain, () => after(this.consolidateOne(a, s, trigger), (run) => void out.push(run)));
        return after(chain, () => out);
      });
      return Promise.resolve(all);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** One agent, holding its consolidation lease (one replica at a time when shared). */
  private consolidateOne(a: string, s: MemorySettings, trigger: string): Maybe<RunRecord> {
    return this.sched.exclusive("consolidate", a, "", () => {
      const started = this.clock.now();
      return after(this.store.runs(a, "consolidation", 1), (runs) => after(this.backend.lastTurnAt(a), (lastTurn) => after(this.store.pendingCount(a), (pending) => {
        const prev = runs[0];
        const idle = pending === 0 && (lastTurn == null || started - lastTurn >= s.summaryDebounceSeconds * 1000);
        return after(consolidateAgent(this.backend, a, s, started, prev ? prev.startedAt : null, idle), (rep: ConsolidationReport) => {
          const run: RunRecord = { id: newId("mrun"), agent: a, type: "consolidation", trigger, startedAt: started, finishedAt: this.clock.now(), result: rep as unknown as Record<string, unknown> };
          return after(this.store.addRun(run), () => run);
        });
      })));
    });
  }

  /** Index operations: each touches only the named agent. */
  removeIndex(agent: string): Promise<RunRecord> {
    return this.indexRun(agent, "remove_index", () => this.index.remove(agent));
  }

  async purge(agent: string): Promise<RunRecord> {
    await this.sched.disarmAgent(agent);
    return this.indexRun(agent, "purge", async () => ({ index: await this.index.remove(agent), records: await this.backend.purgeRecords(agent) }));
  }

  async rebuild(agent: string): Promise<RunRecord> {
    const run = await this.indexRun(agent, "rebuild_index", () => this.index.rebuild(agent));
    const m = this.settings().embeddingModel;
    if (m) {
      const texts = await this.index.texts(agent);
      const embedded = await this.embedNow(agent, texts);
      run.result.vectors = embedded;
    }
    return run;
  }

  private async indexRun(agent: string, op: string, f: () => unknown): Promise<RunRecord> {
    const startedAt = this.clock.now();
    const result = { op, ...((await f()) as object) };
    const run: RunRecord = { id: newId("mrun"), agent, type: "index", trigger: op, startedAt, finishedAt: this.clock.now(), result };
    await this.store.addRun(run);
    return run;
  }

  /** Embed new material in the background (nothing to do without an embedding model). */
  embedLater(agent: string, items: Array<{ kind: MemoryKind; ref: number; text: string }>, trace?: Span): void {
    if (!this.settings().embeddingModel || !items.length) return;
    this.track(this.embedNow(agent, items, trace));
  }

  private async embedNow(agent: string, items: Array<{ kind: MemoryKind; ref: number; text: string }>, trace?: Span): Promise<number> {
    const m = this.settings().embeddingModel;
    if (!m) return 0;
    let n = 0;
    try {
      for (let i = 0; i < items.length; i += 64) {
        const batch = items.slice(i, i + 64);
        const vecs = await this.calls.embed(m, batch.map((b) => b.text), trace);
        for (let j = 0; j < batch.length; j++) if (vecs[j]) (await this.index.putVector(agent, batch[j].kind, batch[j].ref, m, vecs[j]), n++);
      }
    } catch (e: any) {
      this.log.warn("memory embedding failed; those items are found lexically only", { agent, err: String(e?.message ?? e), ...traceField(trace) });
    }
    return n;
  }

  track<T>(p: Promise<T>): Promise<T> {
    this.work.add(p);
    void p.catch(() => undefined).finally(() => this.work.delete(p));
    return p;
  }

  /** Resolves when no distillation, consolidation or embedding is in flight (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.work.size) await Promise.allSettled([...this.work]);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.sched.close(); // signals stay pending: re-armed at the next start
    await this.idle();
    await this.backend.close();
  }
}

/** The memory engine on the store svc runs on: PostgreSQL when replicas share one
 * (SVC_DATABASE_URL), else the embedded SQLite file. */
export async function createMemory(svc: MemoryHost, clock?: Clock): Promise<MemoryEngine> {
  const url = svc.db.postgresUrl;
  let m: MemoryEngine;
  if (url) {
    const { openPgMemory } = await import("./pg/open");
    let engine: MemoryEngine<MemoryBackend> | undefined;
    const { backend, sched } = await openPgMemory(url, svc.log, () => engine!.clock);
    engine = new MemoryEngine<MemoryBackend>(svc, clock, backend, sched);
    // typed as the embedded engine for its callers (see MemoryEngine): they await every call
    m = engine as unknown as MemoryEngine;
  } else m = new MemoryEngine(svc, clock);
  m.start();
  return m;
}

/** The engine with the embedded store's synchronous surface (tests, benches, tools that open the
 * SQLite file); throws when it runs on PostgreSQL instead. */
export function embeddedMemory(m: MemoryEngine): MemoryEngine<SqliteMemory> {
  if (!(m.backend instanceof SqliteMemory)) throw new Error(`memory runs on ${m.backend.dialect}, not the embedded SQLite store`);
  return m as MemoryEngine<SqliteMemory>;
}
