// What GET /tasks/{id} shows of a task, from memory (unfinished) or the store (finished).
import type { Pending } from "./types";

export type TaskStatus = "queued" | "running" | "input_required" | "completed" | "failed" | "cancelled";
export const UNFINISHED: TaskStatus[] = ["queued", "running", "input_required"];

export interface StepView {
  seq: number;
  type: string;
  at: string;
  [k: string]: unknown;
}

export interface TaskView {
  id: string;
  object: "task";
  agent: string;
  title: string | null;
  status: TaskStatus;
  /** why it failed or stopped (interrupted, iteration_budget, an error code, cancelled_by_request) */
  reason: string | null;
  cancel_requested: boolean;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
  progress: { iterations: number; max_iterations: number | null };
  current_step: string | null;
  /** what an input_required task waits for */
  pending: PublicPending | null;
  recent_activity: StepView[];
  result: Record<string, unknown> | null;
}

export type PublicPending =
  | { kind: "clarify"; call_id: string; question: string }
  | { kind: "approval"; call_id: string; tool: string; arguments: unknown };

export function publicPending(p: Pending | undefined | null): PublicPending | null {
  if (!p) return null;
  if (p.kind === "clarify") return { kind: "clarify", call_id: p.callId, question: p.question };
  let args: unknown = p.arguments;
  try {
    args = JSON.parse(p.arguments);
  } catch {
    /* keep the raw text */
  }
  return { kind: "approval", call_id: p.callId, tool: p.tool, arguments: args };
}
