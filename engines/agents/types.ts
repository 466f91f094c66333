// The agent loop's own shapes: its checkpointable state, what it reports while it works, and
// how a run ends. Internal chat shape only (engines/chat/types.ts); no HTTP here.
import type { ChatMessage, ToolCall, ToolChoice } from "../chat/types";
import type { ToolMode } from "../../schemas/kinds/agent";

/** Everything needed to continue a run: a task stores it as its checkpoint. */
export interface LoopState {
  /** the conversation without the system prompt (instructions are added per call) */
  messages: ChatMessage[];
  /** model calls made so far (the iteration budget counts these) */
  iterations: number;
  /** tool calls of the last assistant turn not yet answered, in order */
  queue: ToolCall[];
  /** ids of `ask` calls the user approved */
  approved: string[];
  usage: { promptTokens: number; completionTokens: number };
  /** tool_choice of the first model call only (e.g. force a tool), then auto */
  firstToolChoice?: ToolChoice;
}

/** What a paused run waits for. */
export type Pending =
  | { kind: "clarify"; callId: string; question: string }
  | { kind: "approval"; callId: string; tool: string; arguments: string };

export type ToolOutcome = "ok" | "error" | "denied" | "not_offered" | "rejected" | "capability_missing";

export type LoopEvent =
  | { type: "step"; iteration: number; maxIterations: number }
  | { type: "delta"; text: string }
  /** the whole text of one model turn (the step log keeps this, not every delta) */
  | { type: "text"; iteration: number; text: string }
  | { type: "tool_call"; id: string; name: string; arguments: string; mode: ToolMode | "builtin" | null }
  | { type: "tool_progress"; id: string; name: string; progress: number; total?: number; message?: string }
  | { type: "tool_result"; id: string; name: string; isError: boolean; outcome: ToolOutcome; content: string }
  | { type: "input_required"; pending: Pending };

export type LoopOutcome =
  | { status: "completed"; output: string }
  | { status: "incomplete"; reason: "iteration_budget"; message: string }
  | { status: "input_required"; pending: Pending }
  | { status: "cancelled" };

export function newState(messages: ChatMessage[], firstToolChoice?: ToolChoice): LoopState {
  return { messages, iterations: 0, queue: [], approved: [], usage: { promptTokens: 0, completionTokens: 0 }, firstToolChoice };
}
