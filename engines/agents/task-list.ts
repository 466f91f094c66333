// GET /tasks: detached tasks newest first, filtered by agent and status, paged with an opaque
// cursor, read from the store (every status change of a task is written to its row, so the list
// agrees with GET /tasks/{id} on any replica). Who sees which task is decided by the caller's
// scope (taskScopeOf), the same rights as the usage report's.
import type { PrismaClient } from "../../prisma/client";
import type { KeyEntry } from "../gateway/keys";
import { usageScopeOf } from "../gateway/usage-report";
import { invalidRequest } from "../errors";
import type { TaskStatus, TaskView } from "./task-view";

export const TASK_STATUSES: TaskStatus[] = ["queued", "running", "input_required", "completed", "failed", "cancelled"];
export const MAX_TASK_PAGE = 200;

/** Which tasks a caller sees: every task (null), or those owned by these keys and, for a loopback
 * caller, those dispatched without a key. */
export type TaskScope = null | { ownerKeyIds: string[]; unowned: boolean };

export interface TaskListQuery {
  agent?: string;
  statuses?: TaskStatus[];
  limit: number;
  cursor?: string;
}

/** A task as the list shows it: the task's own fields (task-view.ts) and who dispatched it. */
export type TaskListItem = Pick<TaskView, "id" | "object" | "agent" | "title" | "status" | "reason" | "created_at" | "updated_at" | "finished_at"> & {
  /** the key that dispatched it (null: unauthenticated loopback) */
  key_id: string | null;
  key_name: string | null;
};

/** One page of tasks, newest first (api/ shows it as a list envelope). */
export interface TaskPage {
  items: TaskListItem[];
  /** older tasks follow */
  more: boolean;
  /** where the next (older) page starts; null on the last page */
  cursor: string | null;
}

/** The tasks a caller may see. The administrative key sees every task; a key with
 * permissions.view_all_usage its organization's or team's keys' tasks (as GET /v1/usage); any
 * other key its own. A task dispatched without a key is seen from loopback only (as GET /tasks/{id}
 * has always shown it). */
export function taskScopeOf(all: KeyEntry[], key: KeyEntry | null, loopback: boolean): TaskScope {
  if (!key) return { ownerKeyIds: [], unowned: loopback };
  const s = usageScopeOf(all, key);
  if (s.keyIds) return { ownerKeyIds: s.keyIds, unowned: loopback };
  if (s.organizationId !== undefined) return { ownerKeyIds: all.filter((k) => k.spec.organization_id === s.organizationId).map((k) => k.id), unowned: loopback };
  return null;
}

/** Whether a task owned by `ownerKeyId` is in the scope. */
export function inTaskScope(scope: TaskScope, ownerKeyId: string | null): boolean {
  if (scope === null) return true;
  return ownerKeyId === null ? scope.unowned : scope.ownerKeyIds.includes(ownerKeyId);
}

const encodeCursor = (at: Date, id: string) => Buffer.from(JSON.stringify([at.toISOString(), id])).toString("base64url");

function decodeCursor(c: string): { at: Date; id: string } {
  try {
    const [at, id] = JSON.parse(Buffer.from(c, "base64url").toString("utf8"));
    const d = new Date(at);
    if (typeof at === "string" && typeof id === "string" && !Number.isNaN(d.getTime())) return { at: d, id };
  } catch {
    /* below */
  }
  throw invalidRequest("cursor is not a cursor this list returned", "cursor");
}

export async function listTasks(prisma: PrismaClient, scope: TaskScope, q: TaskListQuery, keyName: (id: string) => string | null): Promise<TaskPage> {
  const and: Record<string, unknown>[] = [];
  if (scope !== null) {
    const owners: Record<string, unknown>[] = [];
    if (scope.ownerKeyIds.length) owners.push({ ownerKeyId: { in: scope.ownerKeyIds } });
    if (scope.unowned) owners.push({ ownerKeyId: null });
    if (!owners.length) return { items: [], more: false, cursor: null };
    and.push({ OR: owners });
  }
  if (q.agent !== undefined) and.push({ agent: q.agent });
  if (q.statuses?.length) and.push({ status: { in: q.statuses } });
  if (q.cursor) {
    const c = decodeCursor(q.cursor);
    and.push({ OR: [{ createdAt: { lt: c.at } }, { createdAt: c.at, id: { lt: c.id } }] });
  }
  const rows = await prisma.agentTask.findMany({
    where: { AND: and },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    take: q.limit + 1,
    select: { id: true, agent: true, title: true, status: true, reason: true, createdAt: true, updatedAt: true, finishedAt: true, ownerKeyId: true },
  });
  const more = rows.length > q.limit;
  const page = rows.slice(0, q.limit);
  const last = page.at(-1);
  return {
    items: page.map((r) => ({
      id: r.id,
      object: "task",
      agent: r.agent,
      title: r.title,
      status: r.status as TaskStatus,
      reason: r.reason,
      created_at: r.createdAt.toISOString(),
      updated_at: r.updatedAt.toISOString(),
      finished_at: r.finishedAt?.toISOString() ?? null,
      key_id: r.ownerKeyId,
      key_name: r.ownerKeyId ? keyName(r.ownerKeyId) : null,
    })),
    more,
    cursor: more && last ? encodeCursor(last.createdAt, last.id) : null,
  };
}
