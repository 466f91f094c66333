// Tasks as the store keeps them: the view of a task read from the store (finished, or run by
// another replica), and pruning by retention (Prisma; none of it is hot).
import type { PrismaClient } from "../../prisma/client";
import type { ResourceStore } from "../../prisma/resource-store";
import type { AgentSpec } from "../../schemas/kinds/agent";
import { publicPending, type TaskStatus, type TaskView } from "./task-view";

const RECENT = 10;

export async function storedView(prisma: PrismaClient, store: ResourceStore, id: string): Promise<TaskView | undefined> {
  return (await storedTask(prisma, store, id))?.view;
}

/** The stored task and the key that owns it, in two reads (the row, its latest steps). */
export async function storedTask(prisma: PrismaClient, store: ResourceStore, id: string): Promise<{ view: TaskView; ownerKeyId: string | null } | undefined> {
  const row = await prisma.agentTask.findUnique({ where: { id } });
  if (!row) return undefined;
  const steps = await prisma.agentTaskStep.findMany({ where: { taskId: id }, orderBy: { seq: "desc" }, take: RECENT });
  const spec = store.get("Agent", row.agent)?.spec as AgentSpec | undefined;
  const view: TaskView = {
    id: row.id,
    object: "task",
    agent: row.agent,
    title: row.title,
    status: row.status as TaskStatus,
    reason: row.reason,
    cancel_requested: row.cancelRequested,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
    finished_at: row.finishedAt?.toISOString() ?? null,
    // the same budget the running task showed (viewOf: the schema's default 8 when the spec omits it)
    progress: { iterations: row.iterations, max_iterations: spec ? (spec.maxIterations ?? 8) : null },
    current_step: null,
    pending: publicPending(row.pending ? JSON.parse(row.pending) : null),
    recent_activity: steps.reverse().map((s) => ({ ...JSON.parse(s.data), seq: s.seq, type: s.type, at: s.at.toISOString() })),
    result: row.result ? JSON.parse(row.result) : null,
  };
  return { view, ownerKeyId: row.ownerKeyId };
}

/** Delete finished tasks (and their steps) that finished more than `hours` before `now`. */
export async function pruneFinished(prisma: PrismaClient, hours: number, now: number): Promise<number> {
  const cutoff = new Date(now - hours * 3_600_000);
  let total = 0;
  for (;;) {
    const old = await prisma.agentTask.findMany({ where: { finishedAt: { lt: cutoff } }, select: { id: true }, take: 500 });
    if (!old.length) return total;
    const ids = old.map((r) => r.id);
    await prisma.$transaction([prisma.agentTaskStep.deleteMany({ where: { taskId: { in: ids } } }), prisma.agentTask.deleteMany({ where: { id: { in: ids } } })]);
    total += ids.length;
  }
}

