// Detached tasks: POST /agents/{id}/dispatch starts the agent loop outside the request; the task
// is polled, answered (clarify / approve) and cancelled by id. States:
//   queued -> running <-> input_required -> completed | failed | cancelled
// (queued, running or input_required can also go straight to cancelled or failed).
//
// Decisions:
// - Server.spec.limits.maxConcurrentDispatch counts every unfinished task (queued, running,
//   input_required): a dispatch over it gets 429 capacity_exceeded and starts nothing.
// - Durable: the task row, its checkpoint (conversation and pending call) and a step log are in
//   the store. The caller's key is held only in memory (keys are never stored in clear), so a
//   task cannot continue after a restart: start-up and shutdown mark unfinished tasks `failed`
//   with reason `interrupted`, never silently dropped.
// - Finished tasks are pruned after Server.spec.limits.taskRetentionHours (default 168).
import type { StoreDb } from "../store/open";
import { randomBytes } from "node:crypto";
import type { Host } from "../host";
import type { ToolRegistry } from "../tools/types";
import type { MemoryEngine } from "../memory/engine";

type TasksHost = Host & { engines: { tools?: ToolRegistry; memory?: MemoryEngine } };
import type { PrismaClient } from "../../prisma/client";
import type { Caller } from "../gateway/pipeline-types";
import type { AgentSpec } from "../../schemas/kinds/agent";
import type { ChatMessage, ToolChoice } from "../chat/types";
import { Cancellation } from "../chat/cancel";
import { SvcError } from "../errors";
import { answer, runLoop } from "./loop";
import { newState, type LoopEvent, type LoopState, type Pending } from "./types";
import { publicPending, pollUrl, type StepView, type TaskStatus, type TaskView } from "./task-view";
import { stepOf, currentStepOf } from "./steps";
import { TaskStore, type TaskRow } from "./task-store";
import { failUnfinished, pruneFinished, storedView } from "./task-records";
import { bufferRunTurn, recallForRun } from "../memory/agent-hooks";
import { redactSecrets } from "../secrets/redact";

const RECENT = 10;
export const DEFAULT_RETENTION_HOURS = 168;

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

interface Active {
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
  /** recalled memory, fixed at the task's first start (undefined: not recalled yet) */
  memory?: string | null;
}

export interface TaskDeps {
  svc: TasksHost;
  chat: (caller: Caller, req: import("../chat/types").ChatRequest, cancel: Cancellation) => Promise<AsyncIterable<import("../chat/types").ChatEvent>>;
}

export class TaskManager {
  private readonly active = new Map<string, Active>();
  private readonly idem = new Map<string, Promise<{ view: TaskView; created: boolean }>>();
  private readonly prisma: PrismaClient;
  private readonly rows: TaskStore;
  private pruneTimer?: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly d: TaskDeps) {
    // Tasks are local to a replica: in PostgreSQL mode they stay in the data dir's own SQLite file,
    // next to the direct TaskStore writes (engines/store/open.ts `local`).
    this.prisma = (d.svc.db as StoreDb).local?.prisma ?? d.svc.db.prisma;
    this.rows = new TaskStore(d.svc.db.sqlite);
  }

  /** Fail what a previous process left unfinished, prune old tasks, and prune hourly from now on. */
  async init(): Promise<void> {
    const n = await failUnfinished(this.prisma);
    if (n) this.d.svc.log.warn("agent tasks interrupted by a restart marked failed", { count: n });
    await this.prune();
    this.pruneTimer = setInterval(() => void this.prune().catch((e) => this.d.svc.log.warn("task prune failed", { err: String(e?.message ?? e) })), 600_000);
    this.pruneTimer.unref();
  }

  get limit(): number {
    return this.d.svc.server.limits?.maxConcurrentDispatch ?? 4;
  }

  get unfinished(): number {
    return this.active.size;
  }

  /** unfinished tasks by status (read by the metrics engine at scrape time) */
  statusCounts(): Partial<Record<TaskStatus, number>> {
    const out: Partial<Record<TaskStatus, number>> = {};
    for (const t of this.active.values()) out[t.status] = (out[t.status] ?? 0) + 1;
    return out;
  }

  /** Start a task, or return the first task of a repeated Idempotency-Key. */
  dispatch(input: DispatchInput): Promise<{ view: TaskView; created: boolean }> {
    if (this.closed) return Promise.reject(new SvcError("unavailable", "model_unavailable", "svc is shutting down"));
    const key = input.idempotencyKey ? `${input.keyId ?? "loopback"}|${input.agent}|${input.idempotencyKey}` : null;
    if (key) {
      const first = this.idem.get(key);
      if (first) return first.then((r) => ({ view: this.viewOfId(r.view.id) ?? r.view, created: false }));
    }
    const p = this.start(input, key);
    if (key) {
      this.idem.set(key, p);
      p.catch(() => this.idem.delete(key));
    }
    return p;
  }

  private async start(input: DispatchInput, idem: string | null): Promise<{ view: TaskView; created: boolean }> {
    if (idem) {
      const row = await this.prisma.agentTask.findUnique({ where: { idempotencyKey: idem } });
      if (row) return { view: this.viewOfId(row.id) ?? (await this.storedView(row.id))!, created: false };
    }
    if (this.active.size >= this.limit) {
      throw new SvcError("rate_limited", "capacity_exceeded", `dispatch concurrency limit reached: ${this.limit} unfinished tasks (Server.spec.limits.maxConcurrentDispatch); nothing was started. Wait for a task to finish, then dispatch again (send an Idempotency-Key to make retries safe)`, null, { retryAfterSeconds: 5 });
    }
    const now = new Date();
    const messages: ChatMessage[] = [{ role: "user", content: input.prompt }];
    const t: Active = {
      id: "task_" + randomBytes(12).toString("base64url"),
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
      state: newState(messages, input.toolChoice),
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
    };
    this.rows.insert(this.row(t)); // durable before the 202 (synchronous, so no other dispatch interleaves)
    this.active.set(t.id, t);
    this.log(t, { type: "status", status: "queued" });
    setImmediate(() => this.execute(t));
    return { view: this.view(t), created: true };
  }

  /** The task and who owns it, or undefined. */
  async get(id: string): Promise<{ view: TaskView; ownerKeyId: string | null } | undefined> {
    const t = this.active.get(id);
    if (t) return { view: this.view(t), ownerKeyId: t.keyId };
    const row = await this.prisma.agentTask.findUnique({ where: { id }, select: { ownerKeyId: true } });
    if (!row) return undefined;
    return { view: (await this.storedView(id))!, ownerKeyId: row.ownerKeyId };
  }

  /** Request cancellation (idempotent): the loop stops at its next safe point. */
  async cancel(id: string): Promise<TaskView | undefined> {
    const t = this.active.get(id);
    if (!t) return (await this.get(id))?.view;
    if (!t.cancelRequested) {
      t.cancelRequested = true;
      this.log(t, { type: "status", status: t.status, cancel_requested: true });
      t.cancel.abort(new DOMException("task cancelled", "AbortError"));
      // nothing runs for a queued or paused task: it ends now
      if (t.status === "input_required" || (t.status === "queued" && !t.runner)) this.finish(t, "cancelled", "cancelled_by_request");
      else this.persist(t);
    }
    return this.view(t);
  }

  /** Answer a pending clarification or approval; 409 unless the task is input_required. */
  clarify(id: string, response: { text?: string; approve?: boolean }): TaskView {
    const t = this.active.get(id);
    if (!t || t.status !== "input_required" || !t.pending) {
      const status = t?.status ?? "finished";
      throw new SvcError("conflict", "conflict", `task ${id} is ${status}, not input_required: there is nothing to clarify`);
    }
    if (t.pending.kind === "approval" && response.approve === undefined) {
      throw new SvcError("invalid", "invalid_request", `task ${id} waits for an approval of ${t.pending.tool}: send {"response": "approve"} or {"response": "deny"}`, "response");
    }
    answer(t.state, t.pending, response);
    this.log(t, { type: "answer", kind: t.pending.kind, ...(t.pending.kind === "approval" ? { approved: response.approve } : { response: response.text }) });
    t.pending = undefined;
    t.status = "running"; // execute() logs the transition
    t.currentStep = "continuing";
    setImmediate(() => this.execute(t));
    return this.view(t);
  }

  private async execute(t: Active): Promise<void> {
    if (t.finishedAt || t.runner) return;
    if (t.cancelRequested) return this.finish(t, "cancelled", "cancelled_by_request");
    const run = (async () => {
      this.setStatus(t, "running");
      try {
        if (t.memory === undefined) t.memory = (await recallForRun(this.d.svc, t.agent, t.spec, t.prompt, t.model))?.text ?? null;
        const out = await runLoop(t.state, {
          agent: t.agent,
          spec: t.spec,
          model: t.model,
          tools: this.d.svc.engines.tools,
          chat: (req, cancel) => this.d.chat(t.caller, req, cancel),
          stream: true,
          cancel: t.cancel,
          emit: (ev) => this.onEvent(t, ev),
          memory: t.memory,
        });
        const usage = { prompt_tokens: t.state.usage.promptTokens, completion_tokens: t.state.usage.completionTokens };
        if (out.status === "cancelled") {
          if (t.interrupted) this.finish(t, "failed", "interrupted", { message: "svc stopped while the task was running" });
          else this.finish(t, "cancelled", "cancelled_by_request", { usage });
        } else if (out.status === "completed") {
          // delegated work: its own memory session, never the agent's direct-chat one
          bufferRunTurn(this.d.svc, t.agent, t.spec, { conversationId: `task:${t.id}`, user: t.prompt, assistant: out.output, delegated: true });
          this.finish(t, "completed", null, { output: out.output, usage });
        }
        else if (out.status === "incomplete") this.finish(t, "failed", out.reason, { message: out.message, usage });
        else {
          t.pending = out.pending;
          this.setStatus(t, "input_required");
        }
      } catch (e: any) {
        const code = typeof e?.code === "string" ? e.code : "internal_error";
        if (!(e instanceof SvcError)) this.d.svc.log.warn("agent task failed", { task: t.id, err: String(e?.message ?? e) });
        // the error's kind, not an HTTP status: api/routes/agents.ts shows it as the status it maps to
        this.finish(t, "failed", t.interrupted ? "interrupted" : code, { error: { code, message: redactSecrets(String(e?.message ?? e)), kind: e instanceof SvcError ? e.kind : "internal" } });
      }
    })();
    t.runner = run;
    await run;
    t.runner = undefined;
  }

  private onEvent(t: Active, ev: LoopEvent): void {
    t.currentStep = currentStepOf(ev, t.currentStep);
    if (ev.type === "delta" || ev.type === "tool_progress") return;
    this.log(t, stepOf(ev));
    if (ev.type === "step" || ev.type === "tool_result") this.persist(t);
  }

  private setStatus(t: Active, status: TaskStatus) {
    t.status = status;
    if (status === "input_required") t.currentStep = t.pending?.kind === "approval" ? `waiting for approval of ${t.pending.tool}` : "waiting for a clarification";
    this.log(t, { type: "status", status });
    this.persist(t);
  }

  private finish(t: Active, status: TaskStatus, reason: string | null, result: Record<string, unknown> | null = null) {
    if (t.finishedAt) return;
    t.status = status;
    t.reason = reason;
    t.result = result;
    t.pending = undefined;
    t.finishedAt = new Date();
    t.currentStep = null;
    this.log(t, { type: "status", status, ...(reason ? { reason } : {}) });
    this.persist(t);
    this.active.delete(t.id); // the final row is written: polls read it from the store now
    if (t.idem) this.idem.delete(t.idem);
  }

  private row(t: Active): TaskRow {
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
    };
  }

  /** Write the task row (status, checkpoint, result). */
  private persist(t: Active) {
    t.updatedAt = new Date();
    this.guard(t, () => this.rows.update(this.row(t)));
  }

  /** Append to the step log (memory and store). */
  private log(t: Active, step: Record<string, unknown> & { type: string }) {
    const at = new Date();
    const s: StepView = { ...step, seq: t.seq++, at: at.toISOString() };
    t.recent.push(s);
    if (t.recent.length > RECENT) t.recent.shift();
    const { seq, type, at: _at, ...data } = s;
    this.guard(t, () => this.rows.appendStep(t.id, seq, type, JSON.stringify(data), at));
  }

  private guard(t: Active, write: () => void) {
    try {
      write();
    } catch (e: any) {
      this.d.svc.log.warn("task store write failed", { task: t.id, err: String(e?.message ?? e) });
    }
  }

  private viewOfId(id: string): TaskView | undefined {
    const t = this.active.get(id);
    return t && this.view(t);
  }

  private view(t: Active): TaskView {
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
      poll_url: pollUrl(t.id),
    };
  }

  private storedView(id: string): Promise<TaskView | undefined> {
    return storedView(this.prisma, this.d.svc.store, id);
  }

  /** Delete finished tasks (and their steps) older than the retention. */
  prune(now = Date.now()): Promise<number> {
    return pruneFinished(this.prisma, this.d.svc.server.limits?.taskRetentionHours ?? DEFAULT_RETENTION_HOURS, now);
  }

  /** Shutdown: unfinished tasks end as failed/interrupted (their caller's key is not kept). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    const all = [...this.active.values()];
    for (const t of all) {
      t.interrupted = true;
      if (t.runner) t.cancel.abort(new DOMException("svc stopping", "AbortError"));
      else this.finish(t, "failed", "interrupted", { message: "svc stopped while the task was unfinished" });
    }
    await Promise.all(all.map((t) => t.runner));
  }
}
