// Task rows and step-log entries written straight through better-sqlite3: synchronous and ~5 µs
// each, where a Prisma write through the JS engine costs about a millisecond and queues behind
// every other (a burst of dispatches would wait on each other). Datetimes are written in the text
// form Prisma itself writes, so its comparisons and parsing agree. One process runs every task,
// so the shared-mode calls (heartbeat, remote requests) have nothing to do here.
import type Database from "better-sqlite3";
import type { PrismaClient } from "../generated/client";
import { UNFINISHED_STATUSES, type TaskRepo, type TaskRow, type TaskSignals } from "./tasks";

/** The DateTime text the Prisma SQLite adapter stores: ISO with "+00:00" for "Z". */
const dbTime = (d: Date | null) => (d ? d.toISOString().slice(0, -1) + "+00:00" : null);

export class SqliteTasks implements TaskRepo {
  readonly shared = false;
  private readonly ins: Database.Statement;
  private readonly upd: Database.Statement;
  private readonly step: Database.Statement;

  constructor(db: Database.Database, private readonly prisma: PrismaClient) {
    this.ins = db.prepare(
      `INSERT INTO AgentTask (id, agent, title, prompt, status, reason, idempotencyKey, ownerKeyId, iterations, messages, pending, result, cancelRequested, createdAt, updatedAt, finishedAt, traceParent)
       VALUES (@id, @agent, @title, @prompt, @status, @reason, @idempotencyKey, @ownerKeyId, @iterations, @messages, @pending, @result, @cancelRequested, @createdAt, @updatedAt, @finishedAt, @traceParent)`,
    );
    this.upd = db.prepare(
      `UPDATE AgentTask SET status = @status, reason = @reason, iterations = @iterations, messages = @messages, pending = @pending, result = @result,
       cancelRequested = @cancelRequested, updatedAt = @updatedAt, finishedAt = @finishedAt WHERE id = @id`,
    );
    this.step = db.prepare(`INSERT INTO AgentTaskStep (taskId, seq, type, data, at) VALUES (?, ?, ?, ?, ?)`);
  }

  admit(r: TaskRow, limit: number, local: number): boolean {
    if (local >= limit) return false;
    const { runner: _r, ...row } = r;
    this.ins.run({ ...row, cancelRequested: r.cancelRequested ? 1 : 0, createdAt: dbTime(r.createdAt), updatedAt: dbTime(r.updatedAt), finishedAt: dbTime(r.finishedAt) });
    return true;
  }

  update(r: TaskRow): void {
    this.upd.run({
      id: r.id, status: r.status, reason: r.reason, iterations: r.iterations, messages: r.messages, pending: r.pending, result: r.result,
      cancelRequested: r.cancelRequested ? 1 : 0, updatedAt: dbTime(r.updatedAt), finishedAt: dbTime(r.finishedAt),
    });
  }

  appendStep(taskId: string, seq: number, type: string, data: string, at: Date): void {
    this.step.run(taskId, seq, type, data, dbTime(at));
  }

  async interruptOrphans(message: string): Promise<string[]> {
    const prisma = this.prisma;
    const left = await prisma.agentTask.findMany({ where: { status: { in: UNFINISHED_STATUSES } }, select: { id: true } });
    const now = new Date();
    for (const { id } of left) {
      const seq = await prisma.agentTaskStep.count({ where: { taskId: id } });
      await prisma.$transaction([
        prisma.agentTask.update({ where: { id }, data: { status: "failed", reason: "interrupted", pending: null, finishedAt: now, updatedAt: now } }),
        prisma.agentTaskStep.create({ data: { taskId: id, seq, type: "status", at: now, data: JSON.stringify({ status: "failed", reason: "interrupted", message }) } }),
      ]);
    }
    return left.map((r) => r.id);
  }

  async heartbeat(): Promise<TaskSignals> {
    return { owned: new Set(), requests: [] };
  }
  async requestCancel(): Promise<boolean> {
    return false;
  }
  async sendAnswer(): Promise<boolean> {
    return false;
  }
  async takeAnswer(): Promise<void> {}
}
