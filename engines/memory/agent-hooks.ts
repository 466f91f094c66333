// What the agents engine asks of memory: recall before a run (only for Agents with memory on)
// and one buffered turn after it (a run's internal model calls are never recorded: the loop
// calls the pipeline directly, not through the X-Svc-Agent-Id path of the protocol routes).
import type { Host } from "../host";
import type { MemoryEngine } from "./engine";

type HooksHost = Host & { engines: { memory?: MemoryEngine } };
import type { AgentSpec } from "../../schemas/kinds/agent";
import type { ChatMessage } from "../chat/types";
import type { Outcome } from "./types";
import { traceField, type Span } from "../telemetry";

export interface RunMemory {
  /** the system message, or null when nothing was recalled */
  text: string | null;
  recalled: number;
  tokens: number;
  budget: number;
}

export function memoryOn(svc: HooksHost, agent: string, spec: AgentSpec): boolean {
  const m = svc.engines.memory;
  return !!m && spec.memory === true && m.refusal(agent) === null;
}

export function lastUserText(messages: ChatMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i].role === "user") return messages[i].content;
  return "";
}

/** Recall for a run; a failure is logged and the run goes on without memory. */
export async function recallForRun(svc: HooksHost, agent: string, spec: AgentSpec, query: string, model: string, trace?: Span): Promise<RunMemory | null> {
  const m = svc.engines.memory;
  if (!m || !memoryOn(svc, agent, spec) || !query.trim()) return null;
  try {
    const r = await m.recall(agent, query, model, trace);
    return { text: r.text, recalled: r.items.length, tokens: r.tokens, budget: r.budget };
  } catch (e: any) {
    svc.log.warn("memory recall failed; the run goes on without memory", { agent, err: String(e?.message ?? e), ...traceField(trace) });
    return null;
  }
}

/** Buffer a finished run's turn: direct chat, or delegated work (a task) in its own session.
 * Never rejects: a store failure is logged and answered as an outcome. */
export async function bufferRunTurn(svc: HooksHost, agent: string, spec: AgentSpec, t: { conversationId: string; user: string; assistant: string; delegated: boolean }, trace?: Span): Promise<Outcome | null> {
  const m = svc.engines.memory;
  if (!m || spec.memory !== true) return null;
  try {
    return await m.recordTurn({ agent, conversationId: t.conversationId, source: t.delegated ? "delegated" : "chat", user: t.user, assistant: t.assistant, trace });
  } catch (e: any) {
    svc.log.warn("memory could not buffer a turn", { agent, err: String(e?.message ?? e), ...traceField(trace) });
    return "failed:store_error";
  }
}
