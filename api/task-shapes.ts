// Tasks and agent runs as the HTTP API shows them. The agents engine describes a task (its state,
// pending question, result); this file adds what belongs to HTTP: the URL to poll, how to answer
// a pending question, a failure's status code, and the list envelope of GET /tasks.
import { notFound, type ErrorKind } from "../engines/errors";
import type { PublicPending, TaskView } from "../engines/agents/task-view";
import type { TaskPage } from "../engines/agents/task-list";
import type { RunResult } from "../engines/agents";
import { statusOfKind } from "./errors";

/** The route a task is polled (GET), cancelled (DELETE) and answered (POST …/clarify) at. */
export const taskPath = (id: string) => `/tasks/${id}`;

/** A pending question with the request that answers it. */
function pendingBody(p: PublicPending | null): (PublicPending & { answer_with: string }) | null {
  if (!p) return null;
  return { ...p, answer_with: p.kind === "clarify" ? 'POST clarify {"response": "<your answer>"}' : 'POST clarify {"response": "approve"} or {"response": "deny"}' };
}

/** A task: its poll URL, the answer hint of a pending question, a failure's error kind as its
 * HTTP status. */
export function taskBody(view: TaskView | undefined) {
  if (!view) throw notFound("the task no longer exists");
  const body = { ...view, pending: pendingBody(view.pending), poll_url: taskPath(view.id) };
  const err = (view.result as { error?: { kind?: ErrorKind; status?: number } } | null)?.error;
  if (!err || err.kind === undefined) return body;
  const { kind, ...rest } = err;
  return { ...body, result: { ...view.result, error: { ...rest, status: statusOfKind(kind) } } };
}

/** GET /tasks: one page as a list envelope; `next_cursor` pages to older tasks. */
export function taskListBody(page: TaskPage) {
  return {
    object: "list" as const,
    data: page.items.map((t) => ({ ...t, poll_url: taskPath(t.id) })),
    has_more: page.more,
    next_cursor: page.cursor,
  };
}

/** A run as the API shows it (JSON answer, SSE done frame). */
export const runBody = (r: RunResult) => ({ object: "agent.run" as const, ...r, pending: pendingBody(r.pending) });
