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
// - Several replicas (PostgreSQL store): the replica that accepted a dispatch runs the task and
//   holds a heartbeat lease on its row (task-lease.ts); any replica answers polls from the row and
//   leaves cancel / clarify requests there for the runner. The capacity counts every replica's
//   unfinished tasks. A runner that dies cannot be replaced (it alone held the caller's key): its
//   tasks end failed/interrupted when the lease runs out, never run a second time.
import { randomBytes } from "node:crypto";
import type { Host } from "../host";
import type { ToolRegistry } from "../tools/types";
import type { MemoryEngine } from "../memory/engine";
import type { PrismaClient } from "../../prisma/client";
import type { Caller } from "../gateway/pipeline-types";
import type { Cancellation } from "../chat/cancel";
import { SvcError } from "../errors";
import { answer, checkAnswer, runLoop } from "./loop";
import { answerElsewhere, claimAtRunner, heardAnswer, type Answer } from "./task-answers";
import type { LoopEvent } from "./types";
import type { StepView, TaskStatus, TaskView } from "./task-view";
import { stepOf, currentStepOf } from "./steps";
import type { TaskRepo } from "../../prisma/repos/tasks";
import { pruneFinished, storedTask, storedView } from "./task-records";
import { TaskWriter } from "./task-writes";
import { LEASE_MS, TaskLease } from "./task-lease";
import { newActive, rowOf, viewOf, type Active, type DispatchInput } from "./task-active";

export type { DispatchInput };
import { clusterOf } from "../cluster";
import { bufferRunTurn, recallForRun } from "../memory/agent-hooks";
import { endSpan, invokeSpan, traced } from "./trace";
import { traceField } from "../telemetry";

type TasksHost = Host & { engines: { tools?: ToolRegistry; memory?: MemoryEngine } };
import { redactSecrets } from "../secrets/redact";

const RECENT = 10;
export const DEFAULT_RETENTION_HOURS = 168;



export interface TaskDeps {
  svc: TasksHost;
  chat: (caller: Caller, req: import("../chat/types").ChatRequest, cancel: Cancellation) => Promise<AsyncIterable<import("../chat/types").ChatEvent>>;
}

export class TaskManager {
  private readonly active = new Map<string, Active>();
  /** finished tasks whose last writes have not reached a shared store yet: polls are answered
   * from here meanwhile, so no replica reads the row before it says the task ended */
  private readonly settling = new Map<string, Active>();
  private readonly idem = new Map<string, Promise<{ view: TaskView; created: boolean }>>();
  private readonly prisma: PrismaClient;
  private readonly rows: TaskRepo;
  private readonly runnerId: string | null;
  private readonly lease?: TaskLease;
  private readonly writes: TaskWriter;
  private pruneTimer?: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly d: TaskDeps) {
    this.prisma = d.svc.db.prisma;
    this.rows = d.svc.db.repos.tasks;
    this.writes = new TaskWriter(this.rows, (msg, extra) => d.svc.log.warn(msg, extra));
    this.runnerId = this.rows.shared ? (clusterOf.get(d.svc)?.replicaId ?? "replica-" + randomBytes(6).toString("hex")) : null;
    if (this.runnerId) {
      this.lease = new TaskLease(this.rows, this.runnerId, {
        local: () => [...this.active.values()],
        cancel: (id) => void this.cancel(id),
        answer: (id, a) => this.answered(id, a),
        lost: (id) => this.lost(id),
        warn: (msg, extra) => d.svc.log.warn(msg, extra),
      });
    }
  }

  /** Fail what a previous process left unfinished, prune old tasks, and prune hourly from now on. */
  async init(): Promise<void> {
    const n = (await this.rows.interruptOrphans("svc restarted while the task was unfinished")).length;
    if (n) this.d.svc.log.warn("agent tasks interrupted by a restart marked failed", { count: n });
    this.lease?.start();
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
      // only a task started here is answered from memory; a replay of a stored task (finished, or
      // run by another replica) is read from the store again next time, or a later repeat would
      // show the state of the first replay for ever
      p.then((r) => {
        if (!r.created && this.idem.get(key) === p) this.idem.delete(key);
      }, () => this.idem.delete(key));
    }
    return p;
  }

  private async start(input: DispatchInput, idem: string | null): Promise<{ view: TaskView; created: boolean }> {
    const replay = async () => {
      const row = idem ? await this.prisma.agentTask.findUnique({ where: { idempotencyKey: idem } }) : null;
      return row ? { view: this.viewOfId(row.id) ?? (await this.storedView(row.id))!, created: false } : undefined;
    };
    const first = await replay();
    if (first) return first;
    const refuse = (): never => {
      throw new SvcError("rate_limited", "capacity_exceeded", `dispatch concurrency limit reached: ${this.limit} unfinished tasks (Server.spec.limits.maxConcurrentDispatch${this.rows.shared ? ", counted over every replica" : ""}); nothing was started. Wait for a task to finish, then dispatch again (send an Idempotency-Key to make retries safe)`, null, { retryAfterSeconds: 5 });
    };
    if (this.active.size >= this.limit && !this.rows.shared) refuse();
    const t = newActive(input, idem, "task_" + randomBytes(12).toString("base64url"));
    // durable before the 202 (SQLite: synchronous, so no other dispatch interleaves; shared: the
    // capacity is counted and the row inserted under one database lock)
    let admitted: boolean;
    try {
      const a = this.rows.admit(rowOf(t, this.runnerId), this.limit, this.active.size, LEASE_MS);
      // SQLite answers synchronously: no await, so no other dispatch runs before active.set below
      admitted = typeof a === "boolean" ? a : await a;
    } catch (e) {
      const again = await replay(); // the same Idempotency-Key won on another replica
      if (again) return again;
      throw e;
    }
    if (!admitted) refuse();
    t.admittedAt = Date.now();
    this.active.set(t.id, t);
    this.log(t, { type: "status", status: "queued" });
    setImmediate(() => this.execute(t));
    return { view: viewOf(t), created: true };
  }

  /** The task and who owns it, or undefined. */
  async get(id: string): Promise<{ view: TaskView; ownerKeyId: string | null } | undefined> {
    const t = this.active.get(id) ?? this.settling.get(id);
    if (t) {
      const view = viewOf(t);
      // shared store: answer once the row says as much, so a poll through another replica agrees
      if (t.writes) await t.writes;
      return { view, ownerKeyId: t.keyId };
    }
    return storedTask(this.prisma, this.d.svc.store, id);
  }

  /** Request cancellation (idempotent): the loop stops at its next safe point. */
  async cancel(id: string): Promise<TaskView | undefined> {
    const t = this.active.get(id);
    const ended = this.settling.get(id);
    if (ended) return viewOf(ended); // finished: nothing to cancel
    if (!t) {
      // run by another replica: its heartbeat picks the request up from the row
      if (this.rows.shared) await this.rows.requestCancel(id);
      return (await this.get(id))?.view;
    }
    if (!t.cancelRequested) {
      t.cancelRequested = true;
      this.log(t, { type: "status", status: t.status, cancel_requested: true });
      t.cancel.abort(new DOMException("task cancelled", "AbortError"));
      // nothing runs for a queued or paused task: it ends now
      if (t.status === "input_required" || (t.status === "queued" && !t.runner)) this.finish(t, "cancelled", "cancelled_by_request");
      else this.persist(t);
    }
    return viewOf(t);
  }

  /** Answer a pending clarification or approval; 409 unless the task is input_required. */
  async clarify(id: string, response: { text?: string; approve?: boolean }): Promise<TaskView> {
    const t = this.active.get(id) ?? this.settling.get(id);
    if (!t && this.rows.shared) return this.clarifyElsewhere(id, response);
    if (!t || t.status !== "input_required" || !t.pending) {
      const status = t?.status ?? "finished";
      throw new SvcError("conflict", "conflict", `task ${id} is ${status}, not input_required: there is nothing to clarify`);
    }
    checkAnswer(id, t.pending, response);
    if (this.rows.shared) {
      const pending = t.pending;
      await claimAtRunner(this.rows, id, pending, response);
      // meanwhile the heartbeat may have delivered this very answer (or a cancel ended the task)
      if (t.pending !== pending) return viewOf(t);
    }
    return this.applyAnswer(t, response);
  }

  /** A task run by another replica: the answer goes into its row, for its runner to apply. */
  private async clarifyElsewhere(id: string, response: Answer): Promise<TaskView> {
    await answerElsewhere(this.prisma, this.rows, id, response);
    return (await this.storedView(id))!;
  }

  /** The runner side of clarifyElsewhere (the lease's heartbeat found the answer). */
  private answered(id: string, json: string): void {
    const t = this.active.get(id);
    const a = heardAnswer(this.rows, id, json, t?.status === "input_required" ? t.pending : undefined);
    if (t && a) this.applyAnswer(t, a);
  }

  /** The row was ended by another replica (or the lease could not be kept): stop here too. */
  private lost(id: string): void {
    const t = this.active.get(id);
    if (!t) return;
    t.interrupted = true;
    if (t.runner) t.cancel.abort(new DOMException("task lease lost", "AbortError"));
    else this.finish(t, "failed", "interrupted", { message: "the task's lease was lost" });
  }

  private applyAnswer(t: Active, response: { text?: string; approve?: boolean }): TaskView {
    if (!t.pending) return viewOf(t);
    answer(t.state, t.pending, response);
    this.log(t, { type: "answer", kind: t.pending.kind, ...(t.pending.kind === "approval" ? { approved: response.approve } : { response: response.text }) });
    t.pending = undefined;
    t.status = "running"; // execute() logs the transition
    t.currentStep = "continuing";
    setImmediate(() => this.execute(t));
    return viewOf(t);
  }

  private async execute(t: Active): Promise<void> {
    if (t.finishedAt || t.runner) return;
    if (t.cancelRequested) return this.finish(t, "cancelled", "cancelled_by_request");
    // each stretch of the run is an invoke_agent span in the task's trace (tracing on)
    const span = t.trace ? invokeSpan(t.trace, t.agent, t.model, t.id) : undefined;
    if (span) t.caller.trace = span;
    const run = (async () => {
      this.setStatus(t, "running");
      try {
        if (t.memory === undefined) t.memory = (await traced(t.spec.memory === true ? span : undefined, "memory recall", { "svc.agent.id": t.agent }, (s) => recallForRun(this.d.svc, t.agent, t.spec, t.prompt, t.model, s)))?.text ?? null;
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
          trace: span,
        });
        const usage = { prompt_tokens: t.state.usage.promptTokens, completion_tokens: t.state.usage.completionTokens };
        if (out.status === "cancelled") {
          if (t.interrupted) this.finish(t, "failed", "interrupted", { message: "svc stopped while the task was running" });
          else this.finish(t, "cancelled", "cancelled_by_request", { usage });
        } else if (out.status === "completed") {
          // delegated work: its own memory session, never the agent's direct-chat one
          void traced(t.spec.memory === true ? span : undefined, "memory write", { "svc.agent.id": t.agent }, (s) => bufferRunTurn(this.d.svc, t.agent, t.spec, { conversationId: `task:${t.id}`, user: t.prompt, assistant: out.output, delegated: true }, s));
          this.finish(t, "completed", null, { output: out.output, usage });
        }
        else if (out.status === "incomplete") this.finish(t, "failed", out.reason, { message: out.message, usage });
        else {
          t.pending = out.pending;
          this.setStatus(t, "input_required");
        }
      } catch (e: any) {
        const code = typeof e?.code === "string" ? e.code : "internal_error";
        if (!(e instanceof SvcError)) this.d.svc.log.warn("agent task failed", { task: t.id, err: String(e?.message ?? e), ...traceField(span ?? t.trace) });
        // the error's kind, not an HTTP status: api/routes/agents.ts shows it as the status it maps to
        this.finish(t, "failed", t.interrupted ? "interrupted" : code, { error: { code, message: redactSecrets(String(e?.message ?? e)), kind: e instanceof SvcError ? e.kind : "internal" } });
      }
    })();
    t.runner = run;
    await run;
    t.runner = undefined;
    endSpan(span, { "svc.task.status": t.status, "svc.task.reason": t.reason ?? undefined }, t.status === "failed" ? { code: t.reason ?? "failed" } : undefined);
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
    this.active.delete(t.id);
    const w = t.writes;
    if (w) {
      // polls read the store once the final row is there
      this.settling.set(t.id, t);
      void w.finally(() => {
        if (this.settling.get(t.id) === t) this.settling.delete(t.id);
      });
    }
    if (t.idem) this.idem.delete(t.idem);
  }


  /** Write the task row (status, checkpoint, result). */
  private persist(t: Active) {
    t.updatedAt = new Date();
    this.writes.row(t, rowOf(t, this.runnerId));
  }

  /** Append to the step log (memory and store). */
  private log(t: Active, step: Record<string, unknown> & { type: string }) {
    const at = new Date();
    const s: StepView = { ...step, seq: t.seq++, at: at.toISOString() };
    t.recent.push(s);
    if (t.recent.length > RECENT) t.recent.shift();
    const { seq, type, at: _at, ...data } = s;
    this.writes.step(t, { seq, type, data: JSON.stringify(data), at });
  }

  private viewOfId(id: string): TaskView | undefined {
    const t = this.active.get(id) ?? this.settling.get(id);
    return t && viewOf(t);
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
    await this.lease?.stop();
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    const all = [...this.active.values()];
    for (const t of all) {
      t.interrupted = true;
      if (t.runner) t.cancel.abort(new DOMException("svc stopping", "AbortError"));
      else this.finish(t, "failed", "interrupted", { message: "svc stopped while the task was unfinished" });
    }
    await Promise.all(all.map((t) => t.runner));
    await this.writes.settled();
  }
}
