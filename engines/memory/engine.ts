// The memory engine: buffers agent-attributed turns as durable pending signals, distills each
// session with one extraction call when its debounce expires (restarted by every turn), when the
// agent's direct chat switches conversation, or on an explicit flush; recalls within a token
// budget; consolidates on an interval and on demand; removes, purges and rebuilds indexes.
// Time comes from an injectable Clock (tests advance a ManualClock instead of sleeping).
import type { MemoryHost } from "./gateway-calls";
import type { AgentSpec } from "../../schemas/kinds/agent";
import { systemClock, type Clock, type TimerHandle } from "./clock";
import { currentSettings, type MemorySettings } from "./config";
import { MemoryStore } from "./store";
import { IndexStore } from "./index-store";
import { MemorySearch } from "./search";
import { GatewayCalls } from "./gateway-calls";
import { Distiller } from "./distiller";
import { buildRecall, type RecallResult } from "./recall";
import { agentsWithMemory, consolidateAgent, purgeRecords, type ConsolidationReport } from "./consolidate";
import { newId } from "./text";
import { KINDS, type Hit, type MemoryKind, type Outcome, type RunRecord, type Turn, type TurnSource } from "./types";

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
}

export interface IngestResult {
  outcome: Outcome;
  turns: { received: number; stored: number; duplicate: number; empty: number };
  pending: number;
  distillation?: { episode_id: number; facts_new: number; facts_supported: number } | null;
}

const sessionKey = (agent: string, conv: string) => `${agent}\u0000${conv}`;

export class MemoryEngine {
  clock: Clock;
  readonly store: MemoryStore;
  readonly index: IndexStore;
  readonly searcher: MemorySearch;
  readonly calls: GatewayCalls;
  private readonly distiller: Distiller;
  private readonly debounces = new Map<string, TimerHandle>();
  /** each agent's current direct-chat conversation (delegated work never changes it) */
  private readonly activeChat = new Map<string, string>();
  private readonly work = new Set<Promise<unknown>>();
  private consolidationTimer?: TimerHandle;
  private scheduledInterval = 0;
  private closed = false;

  constructor(private readonly svc: MemoryHost, clock: Clock = systemClock) {
    this.clock = clock;
    this.index = new IndexStore(svc.db.sqlite);
    this.store = new MemoryStore(svc.db.sqlite, this.index);
    this.searcher = new MemorySearch(svc.db.sqlite, this.index);
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
    this.configure();
  }

  /** Swap the clock (tests): pending timers are re-armed on the new one. */
  useClock(clock: Clock): void {
    for (const t of this.debounces.values()) t.cancel();
    this.debounces.clear();
    this.consolidationTimer?.cancel();
    this.consolidationTimer = undefined;
    this.scheduledInterval = 0;
    this.clock = clock;
    this.start();
  }

  /** Settings changed (MemoryConfig controller): re-arm the consolidation interval. */
  configure(): MemorySettings {
    const s = this.settings();
    // sessions left pending (a previous process, or waiting for an extraction model) get a timer
    for (const p of this.store.pendingSessions()) if (!this.debounces.has(sessionKey(p.agent, p.conversationId))) this.debounce(p.agent, p.conversationId);
    const ms = s.consolidationIntervalHours * 3_600_000;
    if (!this.closed && (ms !== this.scheduledInterval || !this.consolidationTimer)) {
      this.consolidationTimer?.cancel();
      this.scheduledInterval = ms;
      this.consolidationTimer = this.clock.after(ms, () => {
        this.consolidationTimer = undefined;
        this.track(this.consolidate(undefined, "interval").catch((e) => this.log.warn("memory consolidation failed", { err: String(e?.message ?? e) })));
        this.configure();
      });
    }
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
  recordTurn(t: TurnRecord): Outcome {
    const why = this.refusal(t.agent);
    if (why) return `skipped:${why}`;
    if (!t.user.trim() && !t.assistant.trim()) return "skipped:empty";
    const now = this.clock.now();
    const at = t.sessionDate && Number.isFinite(Date.parse(t.sessionDate)) ? Date.parse(t.sessionDate) : now;
    const saved = this.store.addTurn({ agent: t.agent, conversationId: t.conversationId, source: t.source, user: t.user, assistant: t.assistant, sessionDate: t.sessionDate ?? null, project: t.project ?? null, signal: !t.skipExtraction, now: at });
    if (!saved) return "skipped:duplicate";
    this.embedLater(t.agent, [{ kind: "transcript", ref: saved.transcriptId, text: `${t.user}\n${t.assistant}` }]);
    if (t.skipExtraction) return "skipped:skip_extraction";
    if (t.source !== "delegated") {
      const prev = this.activeChat.get(t.agent);
      this.activeChat.set(t.agent, t.conversationId);
      if (prev !== undefined && prev !== t.conversationId) this.track(this.flush(t.agent, prev, "conversation_switch"));
    }
    this.debounce(t.agent, t.conversationId);
    return "buffered";
  }

  /** POST /memory/ingest: every turn of the call, one outcome. `flush` distills at once. */
  async ingest(b: { agent: string; conversationId: string; turns: Turn[]; sessionDate?: string; skipExtraction?: boolean; project?: string; flush?: boolean }): Promise<IngestResult> {
    const counts = { received: b.turns.length, stored: 0, duplicate: 0, empty: 0 };
    const base = (outcome: Outcome): IngestResult => ({ outcome, turns: counts, pending: this.store.pendingIn(b.agent, b.conversationId) });
    const why = this.refusal(b.agent);
    if (why) return base(`skipped:${why}`);
    let last: Outcome | null = null;
    for (const t of b.turns) {
      const o = this.recordTurn({ agent: b.agent, conversationId: b.conversationId, source: "ingest", user: t.user, assistant: t.assistant, sessionDate: b.sessionDate, project: b.project, skipExtraction: b.skipExtraction });
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
    return { ...base(r.outcome), distillation: r.saved ? { episode_id: r.saved.episodeId, facts_new: r.saved.factsNew.length, facts_supported: r.saved.factsSupported.length } : null };
  }

  /** (Re)start a session's timer: the debounce, or a retry after a failed extraction. */
  debounce(agent: string, conv: string, ms = this.settings().summaryDebounceSeconds * 1000, trigger = "debounce"): void {
    const k = sessionKey(agent, conv);
    this.debounces.get(k)?.cancel();
    if (this.closed) return;
    this.debounces.set(k, this.clock.after(ms, () => {
      this.debounces.delete(k);
      this.track(this.flush(agent, conv, trigger));
    }));
  }

  /** Distill a session now (cancels its debounce). */
  flush(agent: string, conv: string, trigger: string) {
    const k = sessionKey(agent, conv);
    this.debounces.get(k)?.cancel();
    this.debounces.delete(k);
    return this.distiller.distill(agent, conv, trigger);
  }

  /** Flush every pending session of an agent (or one conversation). */
  async flushAgent(agent: string, conv?: string): Promise<Array<{ conversation_id: string; outcome: Outcome }>> {
    const sessions = conv ? [conv] : [...new Set(this.store.pendingSessions().filter((s) => s.agent === agent).map((s) => s.conversationId))];
    const out = [];
    for (const c of sessions) out.push({ conversation_id: c, outcome: (await this.flush(agent, c, "explicit")).outcome });
    return out;
  }

  /** Is a session waiting on its debounce? */
  isDebouncing(agent: string, conv: string): boolean {
    return this.debounces.has(sessionKey(agent, conv));
  }

  /** Put a dead letter's signals back and distill them again. */
  async retryDeadLetter(id: string) {
    const d = this.store.deadLetter(id);
    if (!d) return undefined;
    this.store.requeueDead(d, this.clock.now());
    return { dead_letter: id, ...(await this.flush(d.agent, d.conversationId, "dead_letter_retry")) };
  }

  /** The query embedding, or null (no embedding model, or it failed: lexical only). */
  async queryVector(q: string): Promise<Float32Array | null> {
    const m = this.settings().embeddingModel;
    if (!m || !q.trim()) return null;
    try {
      return (await this.calls.embed(m, [q]))[0] ?? null;
    } catch (e: any) {
      this.log.warn("memory query embedding failed; lexical recall only", { err: String(e?.message ?? e) });
      return null;
    }
  }

  async search(agent: string, kinds: readonly MemoryKind[], q: string, limit = 10): Promise<Hit[]> {
    return this.searcher.search(agent, kinds, q, limit, await this.queryVector(q));
  }

  /** The memory system message of an agent run, within memoryBudgetTokens of `model`. */
  async recall(agent: string, query: string, model: string): Promise<RecallResult> {
    const s = this.settings();
    const hits = await this.search(agent, KINDS, query, 30);
    return buildRecall(this.store.identity(agent), hits, s.memoryBudgetTokens, this.calls.counter(model));
  }

  /** Consolidate one agent or all; each agent's run is recorded. */
  async consolidate(agent: string | undefined, trigger: string): Promise<RunRecord[]> {
    const s = this.settings();
    const agents = agent ? [agent] : agentsWithMemory(this.svc.db.sqlite);
    const out: RunRecord[] = [];
    for (const a of agents) {
      const started = this.clock.now();
      const prev = this.store.runs(a, "consolidation", 1)[0];
      const lastTurn = (this.svc.db.sqlite.prepare(`SELECT MAX(createdAt) AS t FROM MemorySignal WHERE agent = ?`).get(a) as { t: number | null }).t;
      const idle = this.store.pendingCount(a) === 0 && (lastTurn == null || started - Number(lastTurn) >= s.summaryDebounceSeconds * 1000);
      const rep: ConsolidationReport = consolidateAgent(this.svc.db.sqlite, this.index, a, s, started, prev ? prev.startedAt : null, idle);
      const run: RunRecord = { id: newId("mrun"), agent: a, type: "consolidation", trigger, startedAt: started, finishedAt: this.clock.now(), result: rep as unknown as Record<string, unknown> };
      this.store.addRun(run);
      out.push(run);
    }
    return out;
  }

  /** Index operations: each touches only the named agent. */
  removeIndex(agent: string): RunRecord {
    return this.indexRun(agent, "remove_index", () => this.index.remove(agent));
  }

  purge(agent: string): RunRecord {
    for (const [k, t] of this.debounces) if (k.startsWith(agent + "\u0000")) (t.cancel(), this.debounces.delete(k));
    this.activeChat.delete(agent);
    return this.indexRun(agent, "purge", () => ({ index: this.index.remove(agent), records: purgeRecords(this.svc.db.sqlite, agent) }));
  }

  async rebuild(agent: string): Promise<RunRecord> {
    const run = this.indexRun(agent, "rebuild_index", () => this.index.rebuild(agent));
    const m = this.settings().embeddingModel;
    if (m) {
      const texts = this.index.texts(agent);
      const embedded = await this.embedNow(agent, texts);
      run.result.vectors = embedded;
    }
    return run;
  }

  private indexRun(agent: string, op: string, f: () => unknown): RunRecord {
    const startedAt = this.clock.now();
    const result = { op, ...(f() as object) };
    const run: RunRecord = { id: newId("mrun"), agent, type: "index", trigger: op, startedAt, finishedAt: this.clock.now(), result };
    this.store.addRun(run);
    return run;
  }

  /** Embed new material in the background (nothing to do without an embedding model). */
  embedLater(agent: string, items: Array<{ kind: MemoryKind; ref: number; text: string }>): void {
    if (!this.settings().embeddingModel || !items.length) return;
    this.track(this.embedNow(agent, items));
  }

  private async embedNow(agent: string, items: Array<{ kind: MemoryKind; ref: number; text: string }>): Promise<number> {
    const m = this.settings().embeddingModel;
    if (!m) return 0;
    let n = 0;
    try {
      for (let i = 0; i < items.length; i += 64) {
        const batch = items.slice(i, i + 64);
        const vecs = await this.calls.embed(m, batch.map((b) => b.text));
        batch.forEach((b, j) => vecs[j] && (this.index.putVector(agent, b.kind, b.ref, m, vecs[j]), n++));
      }
    } catch (e: any) {
      this.log.warn("memory embedding failed; those items are found lexically only", { agent, err: String(e?.message ?? e) });
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
    for (const t of this.debounces.values()) t.cancel(); // signals stay pending: re-armed at start
    this.debounces.clear();
    this.consolidationTimer?.cancel();
    await this.idle();
  }
}

export async function createMemory(svc: MemoryHost, clock?: Clock): Promise<MemoryEngine> {
  const m = new MemoryEngine(svc, clock);
  m.start();
  return m;
}
