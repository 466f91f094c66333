// The agents engine: custom agents (Agent objects), synchronous runs, and detached tasks.
// Every model call goes through the gateway pipeline with the caller's identity, so the key's
// permissions, limits, budget and audit apply to agent work exactly as to direct inference.
import { SvcError } from "../errors";
import { requireAudience } from "../gateway/scopes";
import type { Host } from "../host";
import type { Gateway } from "../gateway";
import type { ToolRegistry } from "../tools/types";
import type { MemoryEngine } from "../memory/engine";

/** What agents use: the gateway (the gate and model calls), the tool catalog, memory. */
export type AgentsHost = Host & { engines: { gateway?: Gateway; tools?: ToolRegistry; memory?: MemoryEngine } };
import type { Caller } from "../gateway/pipeline-types";
import type { Span } from "../telemetry";
import { endSpan, invokeSpan, traced } from "./trace";
import type { AgentSpec } from "../../schemas/kinds/agent";
import type { ChatMessage, ToolChoice } from "../chat/types";
import type { Cancellation } from "../chat/cancel";
import type { KeyEntry } from "../gateway/keys";
import { runLoop } from "./loop";
import { newState, type LoopEvent, type Pending } from "./types";
import { readiness } from "./readiness";
import { TaskManager } from "./tasks";
import { publicPending, type PublicPending } from "./task-view";
import { bufferRunTurn, lastUserText, recallForRun } from "../memory/agent-hooks";

export interface AgentListing {
  id: string;
  object: "agent";
  display_name: string | null;
  description: string | null;
  default_model: string | null;
  capabilities: string[];
  tools: string[];
  max_iterations: number;
  memory: boolean;
  ready: boolean;
  reason: string;
  message: string;
}

export interface RunInput {
  messages: ChatMessage[];
  model?: string;
  toolChoice?: ToolChoice;
  /** memory session of this run (conversation_id); default "default" */
  conversationId?: string;
}

export interface RunResult {
  agent: string;
  model: string;
  /** completed: a final answer; incomplete: stopped (reason iteration_budget or input_required) */
  status: "completed" | "incomplete" | "cancelled";
  reason: string | null;
  message: string | null;
  output: string | null;
  /** an incomplete run that needs input: what it asked (dispatch a task to answer it) */
  pending: PublicPending | null;
  iterations: number;
  usage: { prompt_tokens: number; completion_tokens: number };
  /** memory of an Agent with memory on: what was recalled, and what became of the turn */
  memory: { recalled: number; tokens: number; budget: number; turn: string | null } | null;
}

export class Agents {
  readonly tasks: TaskManager;

  constructor(private readonly svc: AgentsHost) {
    this.tasks = new TaskManager({ svc, chat: (caller, req, cancel) => this.chat(caller, req, cancel) });
  }

  async init(): Promise<void> {
    await this.tasks.init();
  }

  list(): AgentListing[] {
    return this.svc.store
      .list({ kind: "Agent" })
      .sort((a, b) => a.name.localeCompare(b.name))
      .map((o) => {
        const s = o.spec as AgentSpec;
        const r = readiness(this.svc, s);
        return {
          id: o.name,
          object: "agent",
          display_name: s.displayName ?? null,
          description: s.description ?? null,
          default_model: s.defaultModel ?? null,
          capabilities: s.capabilities ?? [],
          tools: s.toolPolicy?.allow ?? [],
          max_iterations: s.maxIterations ?? 8,
          memory: s.memory ?? false,
          ready: r.ready,
          reason: r.reason,
          message: r.message,
        };
      });
  }

  /** The agent's spec and the model a run uses; 404 / 503 naming what is missing. */
  resolve(name: string, modelOverride?: string): { spec: AgentSpec; model: string } {
    const o = this.svc.store.get("Agent", name);
    if (!o || o.deleting) throw new SvcError("not_found", "not_found", `agent ${JSON.stringify(name)} does not exist (GET /agents lists them)`);
    const spec = o.spec as AgentSpec;
    const r = readiness(this.svc, spec, modelOverride);
    if (!r.ready) {
      const code = r.reason === "ModelNotFound" ? "model_not_found" : "model_unavailable";
      throw new SvcError(r.reason === "ModelNotFound" ? "not_found" : "unavailable", code, `agent ${name} is not ready: ${r.reason}: ${r.message}`);
    }
    return { spec, model: r.model! };
  }

  /** The gate for a run or dispatch of agent `name`: authenticate (401), key use with the
   * `action` scope (agents:run / agents:dispatch alone suffice: the agent's model calls are made
   * under this grant, not the caller's inference), the key's audience, its policy. Remote callers
   * need a key allowed to `action`. */
  authorize(caller: Caller, action: "agents:run" | "agents:dispatch", name?: string): KeyEntry | null {
    const gw = this.svc.engines.gateway;
    if (!gw) throw new SvcError("unavailable", "model_unavailable", "agents are unavailable: the gateway engine is not running");
    const key = gw.gate.authenticate(caller, action.replace(":", "."));
    if (key) gw.gate.use(key, caller, action, action);
    if (!caller.loopback) {
      // a key with a scopes list is judged by it; a key without one keeps the older rule:
      // permissions.actions must name the action
      const actions = key?.spec.permissions?.actions;
      if (!key || (!key.spec.scopes && !actions?.some((a: string) => a === "*" || a === action))) {
        throw new SvcError("forbidden", "permission_denied", `${action} from a non-loopback address needs a key with the "${action}" scope (or, for a key without scopes, permissions.actions including "${action}")`);
      }
    }
    if (name !== undefined) requireAudience(key, `agent:${name}`);
    caller.grant = action;
    return key;
  }

  /** One model call through the gateway pipeline, as the caller. */
  private async chat(caller: Caller, req: import("../chat/types").ChatRequest, cancel: Cancellation) {
    const gw = this.svc.engines.gateway;
    if (!gw) throw new SvcError("unavailable", "model_unavailable", "the gateway engine is not running");
    const start = await gw.pipeline.chat(caller, req, cancel);
    return start.events;
  }

  /** Run the loop within the request. `emit` sees every event (SSE); the result ends it. While
   * tracing is on the run is an invoke_agent span, its model calls, tools and memory under it. */
  async run(name: string, caller: Caller, input: RunInput, o: { stream: boolean; cancel: Cancellation; emit?: (ev: LoopEvent) => void | Promise<void> }): Promise<RunResult> {
    const outer = caller.trace;
    if (!outer) return this.runLoopOnce(name, caller, input, o);
    const span = invokeSpan(outer, name, this.resolve(name, input.model).model);
    caller.trace = span;
    let failure: unknown;
    try {
      const r = await this.runLoopOnce(name, caller, input, o, span);
      endSpan(span, { "svc.run.status": r.status, "svc.run.reason": r.reason ?? undefined });
      return r;
    } catch (e) {
      failure = e;
      throw e;
    } finally {
      if (failure !== undefined) endSpan(span, undefined, failure);
      caller.trace = outer;
    }
  }

  private async runLoopOnce(name: string, caller: Caller, input: RunInput, o: { stream: boolean; cancel: Cancellation; emit?: (ev: LoopEvent) => void | Promise<void> }, span?: Span): Promise<RunResult> {
    const { spec, model } = this.resolve(name, input.model);
    const state = newState(input.messages, input.toolChoice);
    const query = lastUserText(input.messages);
    const recalled = await traced(spec.memory === true ? span : undefined, "memory recall", { "svc.agent.id": name }, (s) => recallForRun(this.svc, name, spec, query, model, s));
    const out = await runLoop(state, {
      agent: name,
      spec,
      model,
      tools: this.svc.engines.tools,
      chat: (req, cancel) => this.chat(caller, req, cancel),
      stream: o.stream,
      cancel: o.cancel,
      emit: o.emit ?? (() => {}),
      memory: recalled?.text,
      trace: span,
    });
    // one turn per run (its internal model calls are not turns)
    const turn = out.status === "completed" ? await traced(spec.memory === true ? span : undefined, "memory write", { "svc.agent.id": name }, (s) => bufferRunTurn(this.svc, name, spec, { conversationId: input.conversationId ?? "default", user: query, assistant: out.output, delegated: false }, s)) : null;
    const memory = spec.memory === true && this.svc.engines.memory ? { recalled: recalled?.recalled ?? 0, tokens: recalled?.tokens ?? 0, budget: recalled?.budget ?? this.svc.engines.memory.settings().memoryBudgetTokens, turn } : null;
    const base = { agent: name, model, iterations: state.iterations, usage: { prompt_tokens: state.usage.promptTokens, completion_tokens: state.usage.completionTokens }, memory };
    switch (out.status) {
      case "completed":
        return { ...base, status: "completed", reason: null, message: null, output: out.output, pending: null };
      case "incomplete":
        return { ...base, status: "incomplete", reason: out.reason, message: out.message, output: lastText(state.messages), pending: null };
      case "input_required":
        return { ...base, status: "incomplete", reason: "input_required", message: inputMessage(out.pending), output: lastText(state.messages), pending: publicPending(out.pending) };
      default:
        return { ...base, status: "cancelled", reason: "cancelled", message: "the client went away", output: null, pending: null };
    }
  }

  async close(): Promise<void> {
    await this.tasks.close();
  }
}

function lastText(messages: ChatMessage[]): string | null {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i].role === "assistant" && messages[i].content) return messages[i].content;
  return null;
}

function inputMessage(p: Pending): string {
  return p.kind === "approval"
    ? `tool ${p.tool} needs an approval (mode ask); a synchronous run cannot wait for one: dispatch a task and answer with POST /tasks/{id}/clarify`
    : `the agent asked a question (clarify): ${p.question}; a synchronous run cannot wait for an answer: dispatch a task to answer it`;
}

export async function createAgents(svc: AgentsHost): Promise<Agents> {
  const a = new Agents(svc);
  await a.init();
  return a;
}
