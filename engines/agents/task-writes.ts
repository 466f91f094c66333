// How a task's row and step log reach the store (engines/agents/tasks.ts). SQLite writes
// synchronously, at once. A shared store (PostgreSQL) writes asynchronously, each task's writes in
// order; what a task writes while its previous write is in flight is coalesced into the next one
// (its steps in one insert, and only its latest row, since a row is the whole state), sent in one
// round trip with the repository's writeBatch. A status change (a step and the row, written in
// the same tick) is thus one statement, and a task costs a few round trips, not one per entry.
import type { StepRow, TaskRepo, TaskRow } from "../../prisma/repos/tasks";
import type { Active } from "./task-active";

export class TaskWriter {
  /** writes not settled yet, of every task (shutdown waits for them) */
  private readonly writing = new Set<Promise<void>>();

  constructor(private readonly rows: TaskRepo, private readonly warn: (msg: string, extra: Record<string, unknown>) => void) {}

  row(t: Active, row: TaskRow): void {
    if (this.rows.writeBatch) this.enqueue(t, row, undefined);
    else this.guard(t, () => this.rows.update(row));
  }

  step(t: Active, s: StepRow): void {
    if (this.rows.writeBatch) this.enqueue(t, undefined, s);
    else this.guard(t, () => this.rows.appendStep(t.id, s.seq, s.type, s.data, s.at));
  }

  /** Every write started so far has settled (failed ones were logged). */
  async settled(): Promise<void> {
    await Promise.all([...this.writing]);
  }

  private enqueue(t: Active, row: TaskRow | undefined, step: StepRow | undefined): void {
    const q = t.queued;
    if (q) {
      // a write is scheduled and has not started: this rides along
      if (row) q.row = row;
      if (step) q.steps.push(step);
      return;
    }
    t.queued = { row: row ?? null, steps: step ? [step] : [] };
    this.guard(t, async () => {
      await null; // let the writes of this tick (a step, then the row) join the batch
      const b = t.queued!;
      t.queued = undefined;
      await this.rows.writeBatch!(t.id, b.row, b.steps);
    });
  }

  /** Run a write of the task: at once when the store writes synchronously (SQLite), else after
   * the task's earlier writes, in order. A failed write is logged, never thrown. */
  private guard(t: Active, write: () => void | Promise<void>): void {
    const warn = (e: any) => this.warn("task store write failed", { task: t.id, err: String(e?.message ?? e) });
    if (t.writes) {
      t.writes = t.writes.then(write).catch(warn);
    } else {
      try {
        const p = write();
        if (p) t.writes = p.catch(warn);
      } catch (e) {
        warn(e);
      }
    }
    const w = t.writes;
    if (w && !this.writing.has(w)) {
      this.writing.add(w);
      void w.finally(() => {
        this.writing.delete(w);
        if (t.writes === w) t.writes = undefined;
      });
    }
  }
}
