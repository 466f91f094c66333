// Detached agent tasks shared by replicas (PostgreSQL). The replica that accepted a dispatch runs
// it (the caller's key lives only in its memory) and holds a heartbeat lease on the row; other
// replicas read the row for polls and leave cancel / clarify requests in it for the runner. When a
// runner dies its lease runs out and another replica ends the task failed/interrupted, claiming
// the rows with FOR UPDATE SKIP LOCKED: a task is never run by two replicas. Times are compared on
// the database's clock, in UTC (the TIMESTAMP(3) columns hold UTC, as Prisma writes them).
import type { PrismaClient } from "../generated-pg/client";
import type { TaskRepo, TaskRow, TaskSignals } from "./tasks";

const NOW = `(now() AT TIME ZONE 'UTC')`;
const LEASE = (p: string) => `${NOW} + (${p}::int * interval '1 millisecond')`;
/** one lock for the capacity check: dispatches on every replica take turns through it */
const CAPACITY_LOCK = 0x5ca1e7a5;
const UNFINISHED = `status IN ('queued', 'running', 'input_required')`;
const iso = (d: Date | null) => (d ? d.toISOString() : null);

const INSERT = `INSERT INTO agenttask (id, agent, title, prompt, status, reason, idempotencykey, ownerkeyid, iterations, messages, pending, result, cancelrequested, createdat, updatedat, finishedat, runner, leaseuntil)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, ${LEASE("$18")})`;
// the runner's write never revives a task another replica ended, nor drops a stored cancel request
const UPDATE = `UPDATE agenttask SET status = $2, reason = $3, iterations = $4, messages = $5, pending = $6, result = $7,
  cancelrequested = cancelrequested OR $8, updatedat = $9, finishedat = $10 WHERE id = $1 AND ${UNFINISHED}`;
const STEP = `INSERT INTO agenttaskstep (taskid, seq, type, data, at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`;
const ORPHANS = `UPDATE agenttask SET status = 'failed', reason = 'interrupted', pending = NULL, answer = NULL, finishedat = ${NOW}, updatedat = ${NOW}
  WHERE id IN (SELECT id FROM agenttask WHERE ${UNFINISHED} AND (leaseuntil IS NULL OR leaseuntil < ${NOW}) FOR UPDATE SKIP LOCKED) RETURNING id`;
const ORPHAN_STEP = `INSERT INTO agenttaskstep (taskid, seq, type, data, at)
  SELECT $1, COALESCE(MAX(seq) + 1, 0), 'status', $2, ${NOW} FROM agenttaskstep WHERE taskid = $1 ON CONFLICT DO NOTHING`;
const RENEW = `UPDATE agenttask SET leaseuntil = ${LEASE("$2")} WHERE runner = $1 AND ${UNFINISHED} RETURNING id, cancelrequested, answer`;

export class PgTasks implements TaskRepo {
  readonly shared = true;
  constructor(private readonly prisma: PrismaClient) {}

  async admit(r: TaskRow, limit: number, _local: number, leaseMs: number): Promise<boolean> {
    return this.prisma.$transaction(async (tx) => {
      await tx.$executeRawUnsafe(`SELECT pg_advisory_xact_lock(${CAPACITY_LOCK})`);
      const [{ n }] = await tx.$queryRawUnsafe<Array<{ n: number }>>(`SELECT COUNT(*)::int AS n FROM agenttask WHERE ${UNFINISHED}`);
      if (n >= limit) return false;
      await tx.$executeRawUnsafe(INSERT, r.id, r.agent, r.title, r.prompt, r.status, r.reason, r.idempotencyKey, r.ownerKeyId, r.iterations, r.messages,
        r.pending, r.result, r.cancelRequested, iso(r.createdAt), iso(r.updatedAt), iso(r.finishedAt), r.runner, Math.round(leaseMs));
      return true;
    }, { timeout: 15_000, maxWait: 15_000 });
  }

  async update(r: TaskRow): Promise<void> {
    await this.prisma.$executeRawUnsafe(UPDATE, r.id, r.status, r.reason, r.iterations, r.messages, r.pending, r.result, r.cancelRequested, iso(r.updatedAt), iso(r.finishedAt));
  }

  async appendStep(taskId: string, seq: number, type: string, data: string, at: Date): Promise<void> {
    await this.prisma.$executeRawUnsafe(STEP, taskId, seq, type, data, iso(at));
  }

  async interruptOrphans(message: string): Promise<string[]> {
    const ids = (await this.prisma.$queryRawUnsafe<Array<{ id: string }>>(ORPHANS)).map((r) => r.id);
    const data = JSON.stringify({ status: "failed", reason: "interrupted", message });
    for (const id of ids) await this.prisma.$executeRawUnsafe(ORPHAN_STEP, id, data);
    return ids;
  }

  async heartbeat(runner: string, leaseMs: number): Promise<TaskSignals> {
    const rows = await this.prisma.$queryRawUnsafe<Array<{ id: string; cancelrequested: boolean; answer: string | null }>>(RENEW, runner, Math.round(leaseMs));
    return {
      owned: new Set(rows.map((r) => r.id)),
      requests: rows.filter((r) => r.cancelrequested || r.answer !== null).map((r) => ({ id: r.id, cancel: r.cancelrequested, answer: r.answer })),
    };
  }

  async requestCancel(id: string): Promise<boolean> {
    return (await this.prisma.$executeRawUnsafe(`UPDATE agenttask SET cancelrequested = true WHERE id = $1 AND ${UNFINISHED}`, id)) > 0;
  }

  async sendAnswer(id: string, answer: string): Promise<boolean> {
    const n = await this.prisma.$executeRawUnsafe(
      `UPDATE agenttask SET answer = $2, status = 'running', updatedat = ${NOW} WHERE id = $1 AND status = 'input_required' AND answer IS NULL AND NOT cancelrequested`, id, answer);
    return n > 0;
  }

  async takeAnswer(id: string): Promise<void> {
    await this.prisma.$executeRawUnsafe(`UPDATE agenttask SET answer = NULL WHERE id = $1`, id);
  }
}

