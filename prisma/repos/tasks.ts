// Detached agent tasks behind one repository (engines/agents/tasks.ts): the SQLite side keeps the
// embedded behaviour (synchronous better-sqlite3 writes, the capacity counted in this process,
// every unfinished task of a previous process interrupted at start); the PostgreSQL side shares
// tasks between replicas: the dispatch capacity counted in the database under a lock, a heartbeat
// lease per runner, and cancel / clarify requests written to the row for the runner to pick up.

export interface TaskRow {
  id: string;
  agent: string;
  title: string | null;
  prompt: string;
  status: string;
  reason: string | null;
  idempotencyKey: string | null;
  ownerKeyId: string | null;
  iterations: number;
  messages: string;
  pending: string | null;
  result: string | null;
  cancelRequested: boolean;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
  /** the replica running the task (shared store; null on SQLite) */
  runner: string | null;
  /** the task's trace (W3C traceparent) while tracing is on, else null */
  traceParent: string | null;
}

/** What the runner's heartbeat found on its tasks' rows. */
export interface TaskSignals {
  /** the runner's unfinished tasks whose lease was renewed: any other is no longer its own */
  owned: Set<string>;
  /** requests written by other replicas: cancel, or an answer (JSON) to a pending question */
  requests: Array<{ id: string; cancel: boolean; answer: string | null }>;
}

/** One entry of a task's step log. */
export interface StepRow {
  seq: number;
  type: string;
  data: string;
  at: Date;
}

export const UNFINISHED_STATUSES = ["queued", "running", "input_required"];

export interface TaskRepo {
  /** true when several replicas share the rows (heartbeat, remote requests) */
  readonly shared: boolean;
  /** Insert the row unless `limit` tasks are unfinished: counted over the whole store when shared
   * (under a lock, so replicas dispatching together never pass it), else `local` (this process). */
  admit(r: TaskRow, limit: number, local: number, leaseMs: number): boolean | Promise<boolean>;
  /** Write status, checkpoint and result. Shared: only while the row is unfinished, and a cancel
   * request stored by another replica is kept. */
  update(r: TaskRow): void | Promise<void>;
  appendStep(taskId: string, seq: number, type: string, data: string, at: Date): void | Promise<void>;
  /** Shared (asynchronous) stores: the task's steps, then its row when given (as update()), in one
   * round trip. The runner coalesces what a task writes while its previous write is in flight. */
  writeBatch?(taskId: string, row: TaskRow | null, steps: StepRow[]): Promise<void>;
  /** End as failed/interrupted the unfinished tasks nobody runs any more: SQLite, all of them (a
   * previous process); shared, those whose runner's lease ran out (FOR UPDATE SKIP LOCKED, so two
   * sweeping replicas never both end one). Returns their ids. */
  interruptOrphans(message: string): Promise<string[]>;
  /** Shared: renew the lease of `runner`'s unfinished tasks and read requests left for them. */
  heartbeat(runner: string, leaseMs: number): Promise<TaskSignals>;
  /** Shared: ask the runner to cancel; false when the task is finished or unknown. */
  requestCancel(id: string): Promise<boolean>;
  /** Shared: leave an answer for an input_required task (status becomes running); false when the
   * task no longer waits for one. */
  sendAnswer(id: string, answer: string): Promise<boolean>;
  /** Shared: the runner took the answer (cleared only if the row still holds that one). */
  takeAnswer(id: string, answer: string): Promise<void>;
}
