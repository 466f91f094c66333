// Distillation of one session: its pending signals go to one extraction call; the answer becomes
// an episode, entities, identity changes and candidate facts in one transaction. A failed
// attempt leaves the signals pending and retries later (30 s, then 2 min); the third failure
// moves them to a dead letter (GET /memory/dead-letters; POST .../retry puts them back).
// Distillations of the same session never overlap: a second trigger waits for the first (in this
// process here; across replicas through the scheduler's lease on the session, pg/jobs.ts).
import type { Logger } from "../host";
import type { AgentSpec } from "../../schemas/kinds/agent";
import type { Clock } from "./clock";
import type { MemorySettings } from "./config";
import type { MemoryRecords, MemoryScheduler } from "./backend";
import type { GatewayCalls } from "./gateway-calls";
import { newId } from "./text";
import { episodeText, type SavedExtraction } from "./store";
import type { MemoryKind, Outcome } from "./types";
import { extractionRequest, parseExtraction } from "./extract";

export const MAX_ATTEMPTS = 3;
export const RETRY_DELAYS_MS = [30_000, 120_000];

export interface DistillResult {
  outcome: Outcome;
  saved?: SavedExtraction;
  dead_letter?: string;
  retry_in_ms?: number;
  run?: string;
}

/** What the distiller uses of the memory engine (engine.ts implements it; declared here so the
 * two modules do not import each other). */
export interface DistillerHost {
  readonly clock: Clock;
  readonly store: MemoryRecords;
  readonly sched: MemoryScheduler;
  readonly calls: GatewayCalls;
  readonly log: Logger;
  settings(): MemorySettings;
  agentSpec(agent: string): AgentSpec | undefined;
  track<T>(p: Promise<T>): Promise<T>;
  embedLater(agent: string, items: Array<{ kind: MemoryKind; ref: number; text: string }>): void;
  debounce(agent: string, conv: string, ms?: number, trigger?: string): Promise<void>;
}

export class Distiller {
  private readonly running = new Map<string, Promise<DistillResult>>();

  constructor(private readonly m: DistillerHost) {}

  /** The extraction model: MemoryConfig.extractionModel, else the agent's defaultModel. */
  modelFor(agent: string): string | undefined {
    return this.m.settings().extractionModel ?? this.m.agentSpec(agent)?.defaultModel;
  }

  distill(agent: string, conv: string, trigger: string): Promise<DistillResult> {
    const k = `${agent}\u0000${conv}`;
    const prev = this.running.get(k) ?? Promise.resolve(undefined);
    const next = prev.catch(() => undefined).then(() => this.m.sched.exclusive("distill", agent, conv, () => this.once(agent, conv, trigger)));
    this.running.set(k, next);
    void next.finally(() => this.running.get(k) === next && this.running.delete(k)).catch(() => undefined);
    return this.m.track(next);
  }

  private async once(agent: string, conv: string, trigger: string): Promise<DistillResult> {
    const signals = await this.m.store.pending(agent, conv);
    if (!signals.length) return { outcome: "skipped:nothing_pending" };
    const started = this.m.clock.now();
    const record = async (result: Record<string, unknown>) => {
      const id = newId("mrun");
      await this.m.store.addRun({ id, agent, type: "distillation", trigger, startedAt: started, finishedAt: this.m.clock.now(), result: { conversation_id: conv, signals: signals.length, ...result } });
      return id;
    };
    const model = this.modelFor(agent);
    if (!model) {
      // not the extraction's fault: no attempt counted; the signals wait for a model (re-armed
      // when MemoryConfig changes, on the next turn, on a flush, or at the next start)
      const run = await record({ outcome: "failed:no_extraction_model", message: "set MemoryConfig.spec.extractionModel or the agent's defaultModel" });
      return { outcome: "failed:no_extraction_model", run };
    }
    let reason: string;
    try {
      const text = await this.m.calls.chat(extractionRequest(model, agent, signals));
      const x = parseExtraction(text);
      const saved = await this.m.store.saveExtraction(agent, conv, x, signals, this.m.clock.now());
      this.m.embedLater(agent, [
        { kind: "episode", ref: saved.episodeId, text: episodeText(x.episode) },
        // each new fact with its own text (x.facts[i] was another fact whenever one before it was
        // already known, repeated or empty)
        ...saved.factsNew.map((id, i) => ({ kind: "fact" as const, ref: id, text: saved.factsNewText[i] ?? "" })).filter((f) => f.text),
      ]);
      const run = await record({ outcome: "distilled", model, episode_id: saved.episodeId, facts_new: saved.factsNew, facts_supported: saved.factsSupported, entities: saved.entities, identity: saved.identity });
      return { outcome: "distilled", saved, run };
    } catch (e: any) {
      if (e?.code === "already_distilled") {
        // the signals were settled (another replica) or deleted (a purge) while the extraction
        // ran: nothing was saved, and it is no failure of the extraction (no attempt counted, no
        // dead letter); turns that arrived meanwhile keep their debounce
        if ((await this.m.store.pendingIn(agent, conv)) > 0) await this.m.debounce(agent, conv);
        const run = await record({ outcome: "skipped:nothing_pending", reason: "already_distilled" });
        return { outcome: "skipped:nothing_pending", run };
      }
      reason = String(typeof e?.code === "string" ? e.code : e?.message ?? "extraction_error").replace(/\s+/g, "_").slice(0, 80);
      const attempts = Math.max(...signals.map((s) => s.attempts)) + 1;
      const ids = signals.map((s) => s.id);
      this.m.log.warn("memory distillation failed", { agent, conversation: conv, attempt: attempts, reason, err: String(e?.message ?? e).slice(0, 300) });
      if (attempts >= MAX_ATTEMPTS) {
        const id = newId("mdl");
        await this.m.store.addDeadLetter({ id, agent, conversationId: conv, reason, attempts, signalIds: ids, createdAt: this.m.clock.now(), resolvedAt: null });
        const run = await record({ outcome: `failed:${reason}`, attempt: attempts, dead_letter: id });
        return { outcome: `failed:${reason}`, dead_letter: id, run };
      }
      await this.m.store.setSignals(ids, "pending", attempts);
      const delay = RETRY_DELAYS_MS[attempts - 1] ?? RETRY_DELAYS_MS[RETRY_DELAYS_MS.length - 1];
      await this.m.debounce(agent, conv, delay, "retry");
      const run = await record({ outcome: `failed:${reason}`, attempt: attempts, retry_in_ms: delay });
      return { outcome: `failed:${reason}`, retry_in_ms: delay, run };
    }
  }
}
