// Answers to a task's question or approval across replicas (shared mode). The runner holds the
// task in memory; any replica may take the answer. The answer is left in the task's row, naming
// the call it answers, for the runner's heartbeat to apply (clarifyElsewhere); an answer taken by
// the runner itself claims the row the same way first, so one question is answered once.
import type { PrismaClient } from "../../prisma/client";
import type { TaskRepo } from "../../prisma/repos/tasks";
import { SvcError } from "../errors";
import { checkAnswer } from "./loop";
import type { Pending } from "./types";
import { endSpan, stepSpan } from "./trace";

export type Answer = { text?: string; approve?: boolean };

/** The answer as the row holds it: it names the call it answers, so the runner applies it to
 * that question only, never to the next one. */
const stored = (response: Answer, pending: Pending) => JSON.stringify({ ...response, callId: pending.callId });

const conflict = (id: string, status: string) => new SvcError("conflict", "conflict", `task ${id} is ${status}, not input_required: there is nothing to clarify`);

/** At the runner: claim the row before applying the answer here. Another replica may have stored
 * an answer already (its heartbeat delivery is up to a second away); then this one is a 409. */
export async function claimAtRunner(rows: TaskRepo, id: string, pending: Pending, response: Answer): Promise<void> {
  const json = stored(response, pending);
  if (!(await rows.sendAnswer(id, json))) throw new SvcError("conflict", "conflict", `task ${id} is no longer input_required: it was answered or cancelled meanwhile`);
  void rows.takeAnswer(id, json).catch(() => undefined);
}

/** A task run by another replica: the answer goes into its row, for its runner to apply. */
export async function answerElsewhere(prisma: PrismaClient, rows: TaskRepo, id: string, response: Answer): Promise<void> {
  const row = await prisma.agentTask.findUnique({ where: { id }, select: { status: true, pending: true, traceParent: true } });
  if (row?.traceParent) endSpan(stepSpan(row.traceParent, "answer_task", { "svc.task.id": id })); // in the task's trace, from this replica
  if (!row || row.status !== "input_required" || !row.pending) throw conflict(id, row?.status ?? "finished");
  const pending = JSON.parse(row.pending) as Pending;
  checkAnswer(id, pending, response);
  if (!(await rows.sendAnswer(id, stored(response, pending)))) throw conflict(id, "no longer input_required");
}

/** The runner's side: an answer its heartbeat found in the row (taken off the row whatever it
 * answers), or undefined when it answers an earlier question than the one pending now. */
export function heardAnswer(rows: TaskRepo, id: string, json: string, pending: Pending | undefined): Answer | undefined {
  void rows.takeAnswer(id, json).catch(() => undefined);
  if (!pending) return undefined;
  const a = JSON.parse(json) as Answer & { callId?: string };
  if (a.callId !== undefined && a.callId !== pending.callId) return undefined;
  return { text: a.text, approve: a.approve };
}
