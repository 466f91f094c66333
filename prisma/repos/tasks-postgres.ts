// Detached agent tasks shared by replicas (PostgreSQL). The replica that accepted a dispatch runs
// it (the caller's key lives only in its memory) and holds a heartbeat lease on the row; other
// replicas read the row for polls and leave cancel / clarify requests in it for the runner. When a
// runner dies its lease runs out and another replica ends the task failed/interrupted, claiming
// the rows with FOR UPDATE SKIP LOCKED: a task is never run by two replicas. Times are compared on
// the database's clock, in UTC (the TIMESTAMP(3) columns hold UTC, as Prisma writes them).
import type { PrismaClient } from "../generated-pg/client";
import type { StepRow, TaskRepo, TaskRow, TaskSignals } from "./tasks";

const NOW = `(now() AT TIME ZONE 'UTC')`;
const LEASE = (p: string) => `${NOW} + (${p}::int * interval '1 millisecond')`;
/** one lock for the capacity check: dispatches on every replica take turns through it */
const CAPACITY_LOCK = 0x5ca1e7a5;
const UNFINISHED = `status IN ('queued', 'running', 'input_required')`;
const iso = (d: Date | null) => (d ? d.toISOString() : null);

// Inserted only while fewer than $19 tasks are unfinished: the count and the insert are one
// statement, run after the capacity lock was taken (its snapshot then sees every admitted row).
const ADMIT = `INSERT INTO agenttask (id, agent, title, prompt, status, reason, idempotencykey, ownerkeyid, iterations, messages, pending, result, cancelrequested, createdat, updatedat, finishedat, runner, leaseuntil, traceparent)
  SELECT $1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text, $8::text, $9::int, $10::text, $11::text, $12::text, $13::boolean,
    $14::timestamp(3), $15::timestamp(3), $16::timestamp(3), $17::text, ${LEASE("$18")}, $20::text
  WHERE (SELECT COUNT(*) FROM agenttask WHERE ${UNFINISHED}) < $19::int`;
// the runner's write never revives a task another replica ended, nor drops a stored cancel request
const SET_ROW = `status = $2, reason = $3, iterations = $4, messages = $5, pending = $6, result = $7,
  cancelrequested = cancelrequested OR $8, updatedat = $9::timestamp(3), finishedat = $10::timestamp(3) WHERE id = $1 AND ${UNFINISHED}`;
const UPDATE = `UPDATE agenttask SET ${SET_ROW}`;
const STEP = `INSERT INTO agenttaskstep (taskid, seq, type, data, at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`;
/** steps given as one JSON array (a single parameter, whatever their number) */
const STEPS_OF = (task: string, json: string) =>
  `INSERT INTO agenttaskstep (taskid, seq, type, data, at) SELECT ${task}, x.seq, x.type, x.data, x.at
  FROM json_to_recordset(${json}::json) AS x(seq int, type text, data text, at timestamp(3)) ON CONFLICT DO NOTHING`;
const STEPS = STEPS_OF("$1::text", "$2");
// a data-modifying WITH runs whether or not the main statement reads it: steps and row in one trip
const STEPS_AND_ROW = `WITH s AS (${STEPS_OF("$1::text", "$11")}) UPDATE agenttask SET ${SET_ROW}`;
const ORPHANS = `UPDATE agenttask SET status = 'failed', reason = 'interrupted', pending = NULL, answer = NULL, finishedat = ${NOW}, updatedat = ${NOW}
  WHERE id IN (SELECT id FROM agenttask WHERE ${UNFINISHED} AND (leaseuntil IS NULL OR leaseuntil < ${NOW}) FOR UPDATE SKIP LOCKED) RETURNING id`;
const ORPHAN_STEP = `INSERT INTO agenttaskstep (taskid, seq, type, data, at)
  SELECT $1, COALESCE(MAX(seq) + 1, 0), 'status', $2, ${NOW} FROM agenttaskstep WHERE taskid = $1 ON CONFLICT DO NOTHING`;
const RENEW = `UPDATE agenttask SET leaseuntil = ${LEASE("$2")} WHERE runner = $1 AND ${UNFINISHED} RETURNING id, cancelrequested, answer`;

const rowArgs = (r: TaskRow) => [r.id, r.status, r.reason, r.iterations, r.messages, r.pending, r.result, r.cancelRequested, iso(r.updatedAt), iso(r.finishedAt)] as const;

export class PgTasks implements TaskRepo {
  readonly shared = true;
  constructor(private readonly prisma: PrismaClient) {}

  async admit(r: TaskRow, limit: number, _local: number, leaseMs: number): Promise<boolean> {
    // BEGIN, lock, insert-if-room, COMMIT: the lock is held for two round trips (dispatches on
    // every replica queue on it), and a batch needs none of an interactive transaction's bookkeeping
    const [, inserted] = await this.prisma.$transaction([
      this.prisma.$executeRawUnsafe(`SELECT pg_advisory_xact_lock(${CAPACITY_LOCK})`),
      this.prisma.$executeRawUnsafe(ADMIT, r.id, r.agent, r.title, r.prompt, r.status, r.reason, r.idempotencyKey, r.ownerKeyId, r.iterations, r.messages,
        r.pending, r.result, r.cancelRequested, iso(r.createdAt), iso(r.updatedAt), iso(r.finishedAt), r.runner, Math.round(leaseMs), limit, r.traceParent),
    ]);
    return inserted > 0;
  }

  async update(r: TaskRow): Promise<void> {
    await this.prisma.$executeRawUnsafe(UPDATE, ...rowArgs(r));
  }

  async writeBatch(taskId: string, row: TaskRow | null, steps: StepRow[]): Promise<void> {
    if (!steps.length) return row ? this.update(row) : undefined;
    const json = JSON.stringify(steps.map((s) => ({ seq: s.seq, type: s.type, data: s.data, at: iso(s.at) })));
    if (row) await this.prisma.$executeRawUnsafe(STEPS_AND_ROW, ...rowArgs(row), json);
    else await this.prisma.$executeRawUnsafe(STEPS, taskId, json);
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

  async takeAnswer(id: string, answer: string): Promise<void> {
    // only the answer that was read: a newer one stored meanwhile (the next question's, through
    // another replica) is not cleared by a late take of the old one
    await this.prisma.$executeRawUnsafe(`UPDATE agenttask SET answer = NULL WHERE id = $1 AND answer = $2`, id, answer);
  }
}

