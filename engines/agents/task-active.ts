// A task while this process runs it (engines/agents/tasks.ts): its in-memory state, the row the
// store keeps of it, and the view GET /tasks/{id} shows.
import type { Caller } from "../gateway/pipeline-types";
import type { AgentSpec } from "../../schemas/kinds/agent";
import { Cancellation } from "../chat/cancel";
import type { ToolChoice } from "../chat/types";
import type { StepRow, TaskRow } from "../../prisma/repos/tasks";
import { newState, type LoopState, type Pending } from "./types";
import { taskTrace } from "./trace";
import { publicPending, type StepView, type TaskStatus, type TaskView } from "./task-view";

export interface Active {
  id: string;
  agent: string;
  title: string | null;
  prompt: string;
  spec: AgentSpec;
  model: string;
  caller: Caller;
  keyId: string | null;
  idem: string | null;
  status: TaskStatus;
  reason: string | null;
  state: LoopState;
  pending?: Pending;
  result: Record<string, unknown> | null;
  cancel: Cancellation;
  cancelRequested: boolean;
  interrupted: boolean;
  currentStep: string | null;
  recent: StepView[];
  seq: number;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
  runner?: Promise<void>;
  /** when the row was written (the lease's check of rows ended elsewhere) */
  admittedAt?: number;
  /** the row's writes in order (a shared store writes asynchronously) */
  writes?: Promise<void>;
  /** a shared store's next write, not started yet: what the task wrote meanwhile (task-writes.ts) */
  queued?: { row: TaskRow | null; steps: StepRow[] };
  /** recalled memory, fixed at the task's first start (undefined: not recalled yet) */
  memory?: string | null;
  /** the task's trace (W3C traceparent), set at dispatch while tracing is on */
  trace?: string;
}

export interface DispatchInput {
  agent: string;
  spec: AgentSpec;
  model: string;
  prompt: string;
  title?: string;
  toolChoice?: ToolChoice;
  caller: Caller;
  /** the authenticated key's id (null: unauthenticated loopback) */
  keyId: string | null;
  idempotencyKey?: string;
}

/** A dispatched task as it starts: queued, its conversation the prompt. */
export function newActive(input: DispatchInput, idem: string | null, id: string): Active {
  const now = new Date();
  return {
    id,
    agent: input.agent,
    title: input.title ?? null,
    prompt: input.prompt,
    spec: input.spec,
    model: input.model,
    caller: input.caller,
    keyId: input.keyId,
    idem,
    status: "queued",
    reason: null,
    state: newState([{ role: "user", content: input.prompt }], input.toolChoice),
    result: null,
    cancel: new Cancellation(),
    cancelRequested: false,
    interrupted: false,
    currentStep: "queued",
    recent: [],
    seq: 0,
    createdAt: now,
    updatedAt: now,
    finishedAt: null,
    trace: taskTrace(input.caller.trace),
  };
}

export function rowOf(t: Active, runner: string | null): TaskRow {
  return {
    id: t.id,
    agent: t.agent,
    title: t.title,
    prompt: t.prompt,
    status: t.status,
    reason: t.reason,
    idempotencyKey: t.idem,
    ownerKeyId: t.keyId,
    iterations: t.state.iterations,
    messages: JSON.stringify(t.state),
    pending: t.pending ? JSON.stringify(t.pending) : null,
    result: t.result ? JSON.stringify(t.result) : null,
    cancelRequested: t.cancelRequested,
    createdAt: t.createdAt,
    updatedAt: t.updatedAt,
    finishedAt: t.finishedAt,
    runner,
    traceParent: t.trace ?? null,
  };
}

export function viewOf(t: Active): TaskView {
  return {
    id: t.id,
    object: "task",
    agent: t.agent,
    title: t.title,
    status: t.status,
    reason: t.reason,
    cancel_requested: t.cancelRequested,
    created_at: t.createdAt.toISOString(),
    updated_at: t.updatedAt.toISOString(),
    finished_at: t.finishedAt?.toISOString() ?? null,
    progress: { iterations: t.state.iterations, max_iterations: t.spec.maxIterations ?? 8 },
    current_step: t.currentStep,
    pending: publicPending(t.pending),
    recent_activity: [...t.recent],
    result: t.result,
  };
}
