// Shared store only (several replicas): the runner side of a task's lease. Every HEARTBEAT_MS the
// replica renews the lease of the tasks it runs and picks up what other replicas left in their
// rows (a cancel request, an answer to a pending question), and ends as failed/interrupted the
// tasks whose runner stopped renewing (it died). A task this replica runs whose row was ended
// elsewhere (this replica lost the database for longer than the lease) is stopped here too, so
// no task goes on running on two replicas.
import type { TaskRepo } from "../../prisma/repos/tasks";

export const HEARTBEAT_MS = 1000;
export const LEASE_MS = 4000;

export interface LeaseHooks {
  /** ids of the tasks this replica runs, with when their row was written */
  local(): Array<{ id: string; admittedAt?: number }>;
  cancel(id: string): void;
  answer(id: string, answer: string): void;
  /** the row says the task ended elsewhere, or the lease could not be renewed in time */
  lost(id: string): void;
  warn(msg: string, extra?: Record<string, unknown>): void;
}

export class TaskLease {
  private timer?: NodeJS.Timeout;
  private lastRenew = Date.now();
  private busy = false;
  private stopped = false;
  /** the heartbeat in flight, if any */
  private running?: Promise<void>;

  constructor(private readonly repo: TaskRepo, private readonly runner: string, private readonly h: LeaseHooks, private readonly leaseMs = LEASE_MS) {}

  start(): void {
    this.timer = setInterval(() => void this.tick(), HEARTBEAT_MS);
    this.timer.unref();
  }

  /** No heartbeat after this; resolves once the one in flight is done, so none acts on tasks (or
   * queries the store) after the manager has closed them. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }

  tick(): Promise<void> {
    if (this.busy || this.stopped) return Promise.resolve();
    this.busy = true;
    this.running = this.beat().finally(() => {
      this.busy = false;
      this.running = undefined;
    });
    return this.running;
  }

  private async beat(): Promise<void> {
    const began = Date.now();
    try {
      const s = await this.repo.heartbeat(this.runner, this.leaseMs);
      this.lastRenew = began;
      if (this.stopped) return; // the manager is closing its tasks itself
      for (const t of this.h.local()) if (t.admittedAt !== undefined && t.admittedAt < began && !s.owned.has(t.id)) this.h.lost(t.id);
      for (const r of s.requests) {
        if (r.cancel) this.h.cancel(r.id);
        else if (r.answer !== null) this.h.answer(r.id, r.answer);
      }
      if (this.stopped) return;
      const gone = await this.repo.interruptOrphans("the replica running the task stopped (its lease ran out)");
      if (gone.length) this.h.warn("agent tasks of a stopped replica marked failed/interrupted", { count: gone.length });
    } catch (e: any) {
      this.h.warn("task heartbeat failed", { err: String(e?.message ?? e) });
      // past the lease another replica may already have ended these tasks: stop them here
      if (!this.stopped && Date.now() - this.lastRenew > this.leaseMs) for (const t of this.h.local()) this.h.lost(t.id);
    }
  }
}
