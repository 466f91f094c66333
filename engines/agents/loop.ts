// The agent loop: call the model (through the gateway pipeline, so the caller's key, limits,
// budget and audit apply), run the tool calls it makes under the agent's tool policy, feed the
// results back, until a final answer, the iteration budget, a pause for input, or cancellation.
//
// Safe points: cancellation is checked before every model call and every tool call; an in-flight
// model call or tool call is aborted through the run's Cancellation (its AbortSignal for tools).
// A pause (clarify, or a tool in `ask` mode) leaves the call at the head of state.queue; answer()
// resolves it and the next runLoop() continues from there.
import type { Cancellation } from "../chat/cancel";
import type { ChatEvent, ChatMessage, ChatRequest, ToolCall, ToolDef } from "../chat/types";
import type { AgentSpec } from "../../schemas/kinds/agent";
import { isToolError, type ToolCallResult, type ToolRegistry } from "../tools/types";
import { CLARIFY_TOOL, offeredTools, toolMode } from "./policy";
import { MEMORY_TOOL } from "../tools/builtins";
import { redactSecrets } from "../secrets/redact";
import { capabilityRefusal, missingCapabilities } from "./capabilities";
import type { LoopEvent, LoopOutcome, LoopState, Pending, ToolOutcome } from "./types";
import { SvcError } from "../errors";
import type { Span } from "../telemetry";
import { endSpan, toolSpan } from "./trace";
import { tracing } from "../telemetry";

/** Tool output kept in the conversation (and the step log) per call. */
const MAX_TOOL_OUTPUT = 32_000;

export const clarifyTool: ToolDef = {
  name: CLARIFY_TOOL,
  description: "Ask the person who gave you this task a question and wait for the answer. Use it when the task is ambiguous or you need a decision.",
  parameters: { type: "object", properties: { question: { type: "string", description: "The question to ask." } }, required: ["question"] },
};

export interface LoopDeps {
  agent: string;
  spec: AgentSpec;
  model: string;
  tools?: ToolRegistry;
  /** one model call: the gateway pipeline with the caller's identity */
  chat(req: ChatRequest, cancel: Cancellation): Promise<AsyncIterable<ChatEvent>>;
  /** stream the model calls (deltas reach emit as they come) */
  stream: boolean;
  emit(ev: LoopEvent): void | Promise<void>;
  cancel: Cancellation;
  /** recalled memory (engines/memory), sent as a system message after the instructions */
  memory?: string | null;
  /** the run's invoke_agent span while tracing is on: tool calls are its children */
  trace?: Span;
}

export async function runLoop(state: LoopState, d: LoopDeps): Promise<LoopOutcome> {
  const max = d.spec.maxIterations ?? 8;
  for (;;) {
    while (state.queue.length) {
      if (d.cancel.aborted) return { status: "cancelled" };
      const pause = await handleCall(state, state.queue[0], d);
      if (pause === "cancelled") return { status: "cancelled" };
      if (pause) {
        await d.emit({ type: "input_required", pending: pause });
        return { status: "input_required", pending: pause };
      }
      state.queue.shift();
    }
    if (d.cancel.aborted) return { status: "cancelled" };
    if (state.iterations >= max) {
      return { status: "incomplete", reason: "iteration_budget", message: `iteration budget reached: ${max} model call${max === 1 ? "" : "s"} (Agent.spec.maxIterations) without a final answer` };
    }
    state.iterations++;
    await d.emit({ type: "step", iteration: state.iterations, maxIterations: max });
    const turn = await modelTurn(state, d);
    if (turn === "cancelled") return { status: "cancelled" };
    state.messages.push({ role: "assistant", content: turn.text, ...(turn.calls.length ? { toolCalls: turn.calls } : {}) });
    if (turn.text) await d.emit({ type: "text", iteration: state.iterations, text: turn.text });
    if (!turn.calls.length) return { status: "completed", output: turn.text };
    state.queue = [...turn.calls]; // a copy: the queue is consumed, the message keeps its calls
  }
}

/** An approval pause needs an approve/deny decision, not text (400 before anything changes). */
export function checkAnswer(id: string, pending: Pending, response: { text?: string; approve?: boolean }): void {
  if (pending.kind === "approval" && response.approve === undefined) {
    throw new SvcError("invalid", "invalid_request", `task ${id} waits for an approval of ${pending.tool}: send {"response": "approve"} or {"response": "deny"}`, "response");
  }
  // a question needs a text answer: {approve: true} alone would otherwise be taken as an empty
  // answer, and the task would go on without what it asked (the client's mistake, so 400)
  if (pending.kind === "clarify" && response.text === undefined) {
    throw new SvcError("invalid", "invalid_request", `task ${id} waits for an answer to a question (${pending.question}): send {"response": "<your answer>"}`, "response");
  }
}

/** Apply the answer to a pause: a clarification's text, or an approval decision. */
export function answer(state: LoopState, pending: Pending, response: { text?: string; approve?: boolean }): void {
  const head = state.queue[0];
  if (!head || head.id !== pending.callId) throw new Error("the paused call is not at the head of the queue");
  if (pending.kind === "clarify") {
    state.messages.push({ role: "tool", toolCallId: head.id, name: head.name, content: response.text ?? "" });
    state.queue.shift();
  } else if (response.approve) {
    state.approved.push(head.id);
  } else {
    state.messages.push({ role: "tool", toolCallId: head.id, name: head.name, content: `The user rejected this call of ${head.name}; do not retry it.` });
    state.queue.shift();
  }
}

/** An agent with memory on is offered svc_memory_search unless its policy denies it. */
function modeOf(d: LoopDeps, name: string) {
  const m = toolMode(d.spec.toolPolicy, name);
  return m === null && name === MEMORY_TOOL && d.spec.memory === true ? "auto" : m;
}

function toolDefs(d: LoopDeps): ToolDef[] {
  // the model is offered only what the agent's capabilities allow (capabilities.ts)
  const offered = offeredTools(d.spec.toolPolicy, d.tools).filter((t) => missingCapabilities(d.spec, t).length === 0);
  const mem = d.spec.memory === true && modeOf(d, MEMORY_TOOL) !== "deny" ? d.tools?.get(MEMORY_TOOL) : undefined;
  if (mem && !offered.some((t) => t.name === MEMORY_TOOL)) offered.push(mem);
  const defs: ToolDef[] = offered.map((t) => ({ name: t.name, description: t.description, parameters: t.inputSchema }));
  defs.push(clarifyTool);
  return defs;
}

async function modelTurn(state: LoopState, d: LoopDeps): Promise<{ text: string; calls: ToolCall[] } | "cancelled"> {
  const messages: ChatMessage[] = d.spec.instructions ? [{ role: "system", content: d.spec.instructions }] : [];
  if (d.memory) messages.push({ role: "system", content: d.memory });
  messages.push(...state.messages);
  const req: ChatRequest = {
    model: d.model,
    messages,
    maxTokens: d.spec.maxOutputTokens,
    sampling: {},
    tools: toolDefs(d),
    toolChoice: state.firstToolChoice ?? "auto",
    stream: d.stream,
    agentId: d.agent,
  };
  state.firstToolChoice = undefined;
  let text = "";
  const calls: ToolCall[] = [];
  try {
    const events = await d.chat(req, d.cancel);
    for await (const ev of events) {
      if (ev.type === "text") {
        text += ev.text;
        await d.emit({ type: "delta", text: ev.text });
      } else if (ev.type === "tool_call_start") calls[ev.index] = { id: ev.id, name: ev.name, arguments: "" };
      else if (ev.type === "tool_call_delta") calls[ev.index].arguments += ev.argumentsDelta;
      else if (ev.type === "done") {
        state.usage.promptTokens += ev.usage.promptTokens;
        state.usage.completionTokens += ev.usage.completionTokens;
      }
    }
  } catch (e) {
    if (d.cancel.aborted) return "cancelled";
    throw e;
  }
  return { text, calls: calls.filter(Boolean) };
}

/** Run (or refuse, or pause on) one call. Returns a Pending to pause, "cancelled", or undefined when answered. */
async function handleCall(state: LoopState, call: ToolCall, d: LoopDeps): Promise<Pending | "cancelled" | undefined> {
  const reply = async (raw: string, isError: boolean, outcome: ToolOutcome) => {
    // a tool's output joins the conversation (the task checkpoint) and the step log: no secrets
    const content = redactSecrets(raw);
    const text = content.length > MAX_TOOL_OUTPUT ? content.slice(0, MAX_TOOL_OUTPUT) + `\n[truncated: ${content.length} characters]` : content;
    state.messages.push({ role: "tool", toolCallId: call.id, name: call.name, content: text });
    await d.emit({ type: "tool_result", id: call.id, name: call.name, isError, outcome, content: text });
  };
  const approved = state.approved.includes(call.id);
  if (call.name === CLARIFY_TOOL) {
    await d.emit({ type: "tool_call", id: call.id, name: call.name, arguments: call.arguments, mode: "builtin" });
    const args = parseArgs(call.arguments);
    const question = typeof args?.question === "string" && args.question ? args.question : call.arguments || "(no question given)";
    return { kind: "clarify", callId: call.id, question };
  }
  const mode = modeOf(d, call.name);
  if (!approved) await d.emit({ type: "tool_call", id: call.id, name: call.name, arguments: call.arguments, mode });
  const info = mode === null ? undefined : d.tools?.get(call.name);
  if (!info || !d.tools) {
    await reply(`Error: tool ${call.name} is not available to this agent.`, true, "not_offered");
    return;
  }
  const refusal = capabilityRefusal(d.agent, d.spec, info);
  if (refusal) {
    await reply(`Error: ${refusal}.`, true, "capability_missing");
    return;
  }
  if (mode === "deny") {
    await reply(`Error: tool ${call.name} is denied by this agent's tool policy.`, true, "denied");
    return;
  }
  if (mode === "ask" && !approved) return { kind: "approval", callId: call.id, tool: call.name, arguments: call.arguments };
  const args = parseArgs(call.arguments);
  if (!args) {
    await reply(`Error: the arguments of ${call.name} are not a JSON object: ${call.arguments.slice(0, 200)}`, true, "error");
    return;
  }
  let r: ToolCallResult;
  const span = d.trace ? toolSpan(d.trace, call.name, call.id) : undefined;
  try {
    r = await d.tools.call(call.name, args, {
      signal: d.cancel.signal,
      agent: d.agent,
      onProgress: (p) => void d.emit({ type: "tool_progress", id: call.id, name: call.name, ...p }),
      traceparent: span && tracing.spans?.headers(span).traceparent,
    });
    endSpan(span, undefined, r.isError ? { code: "tool_error" } : undefined);
  } catch (e) {
    endSpan(span, undefined, e);
    if (d.cancel.aborted) return "cancelled";
    const msg = isToolError(e) ? `${e.code}: ${e.message}` : String((e as Error)?.message ?? e);
    await reply(`Error: ${msg}`, true, "error");
    return;
  }
  await reply(resultText(r), r.isError, r.isError ? "error" : "ok");
  return;
}

function parseArgs(s: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(s || "{}");
    return v && typeof v === "object" && !Array.isArray(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

/** Text of a tool result for the model: text parts as they are, other parts as JSON. */
export function resultText(r: ToolCallResult): string {
  const parts = r.content.map((c) => (c.type === "text" && typeof c.text === "string" ? c.text : JSON.stringify(c)));
  if (!parts.length && r.structuredContent) parts.push(JSON.stringify(r.structuredContent));
  return parts.join("\n");
}
