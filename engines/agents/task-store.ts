// Task rows and step-log entries written straight through better-sqlite3 (OpenedDb.sqlite):
// synchronous and ~5 µs each, where a Prisma write through the JS engine costs about a
// millisecond and queues behind every other — a burst of dispatches would wait on each other.
// Reads (polls of finished tasks, start-up, pruning) stay on Prisma. Datetimes are written in
// the text form Prisma itself writes, so its comparisons and parsing agree.
import type Database from "better-sqlite3";
import { dbIsoAt } from "../iso-time";

export const dbTime = (d: Date | null) => (d ? dbIsoAt(d.getTime()) : null);

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
}

export class TaskStore {
  private readonly ins: Database.Statement;
  private readonly upd: Database.Statement;
  private readonly step: Database.Statement;

  constructor(db: Database.Database) {
    this.ins = db.prepare(
      `INSERT INTO AgentTask (id, agent, title, prompt, status, reason, idempotencyKey, ownerKeyId, iterations, messages, pending, result, cancelRequested, createdAt, updatedAt, finishedAt)
       VALUES (@id, @agent, @title, @prompt, @status, @reason, @idempotencyKey, @ownerKeyId, @iterations, @messages, @pending, @result, @cancelRequested, @createdAt, @updatedAt, @finishedAt)`,
    );
    this.upd = db.prepare(
      `UPDATE AgentTask SET status = @status, reason = @reason, iterations = @iterations, messages = @messages, pending = @pending, result = @result,
       cancelRequested = @cancelRequested, updatedAt = @updatedAt, finishedAt = @finishedAt WHERE id = @id`,
    );
    this.step = db.prepare(`INSERT INTO AgentTaskStep (taskId, seq, type, data, at) VALUES (?, ?, ?, ?, ?)`);
  }

  private params(r: TaskRow) {
    return { ...r, cancelRequested: r.cancelRequested ? 1 : 0, createdAt: dbTime(r.createdAt), updatedAt: dbTime(r.updatedAt), finishedAt: dbTime(r.finishedAt) };
  }

  insert(r: TaskRow): void {
    this.ins.run(this.params(r));
  }

  update(r: TaskRow): void {
    const p = this.params(r);
    this.upd.run({ id: p.id, status: p.status, reason: p.reason, iterations: p.iterations, messages: p.messages, pending: p.pending, result: p.result, cancelRequested: p.cancelRequested, updatedAt: p.updatedAt, finishedAt: p.finishedAt });
  }

  appendStep(taskId: string, seq: number, type: string, data: string, at: Date): void {
    this.step.run(taskId, seq, type, data, dbTime(at));
  }
}
