// The task list (engines/agents/task-list.ts); one task is GET /tasks/{id} in agents.ts.
//   GET /tasks ?agent=&status=running,input_required&limit=50&cursor=
// Newest first; `next_cursor` pages to older tasks. A key sees its own tasks, or its team's or
// organization's with permissions.view_all_usage (as GET /v1/usage); the administrative key every
// task; loopback callers also the tasks dispatched without a key. read_only keys are refused,
// as on every agents route.
import Router from "@koa/router";
import type { Context } from "koa";
import type { Svc } from "../../engines/svc";
import { SvcError, invalidRequest } from "../../engines/errors";
import { listTasks, taskScopeOf, MAX_TASK_PAGE, TASK_STATUSES, type TaskListQuery } from "../../engines/agents/task-list";
import type { TaskStatus } from "../../engines/agents/task-view";
import { callerFrom } from "../caller";
import { taskListBody } from "../task-shapes";

export default function routes(svc: Svc): Router {
  const r = new Router();

  r.get("/tasks", async (ctx) => {
    if (!svc.engines.agents) throw new SvcError("unavailable", "model_unavailable", "agents are unavailable: the agents engine is not running");
    const gw = svc.engines.gateway;
    if (!gw) throw new SvcError("unavailable", "model_unavailable", "agents are unavailable: the gateway engine is not running");
    const key = gw.gate.identify(callerFrom(ctx)); // 401 for a bad key, 403 for a read_only one
    if (key) ctx.state.keyId = key.id;
    const keys = gw.keys;
    const scope = taskScopeOf(keys.all(), key, callerFrom(ctx).loopback);
    ctx.set("cache-control", "no-store");
    ctx.body = taskListBody(await listTasks(svc.db.prisma, scope, parseQuery(ctx), (id) => keys.get(id)?.name ?? null));
  });

  return r;
}

function parseQuery(ctx: Context): TaskListQuery {
  const one = (name: string): string | undefined => {
    const v = ctx.query[name];
    if (Array.isArray(v)) throw invalidRequest(`${name} may be given once`, name);
    if (v !== undefined && v.length > 500) throw invalidRequest(`${name} is too long`, name);
    return v === undefined || v === "" ? undefined : v;
  };
  const status = one("status");
  const statuses = status?.split(",").map((s) => s.trim()).filter(Boolean);
  for (const s of statuses ?? []) {
    if (!(TASK_STATUSES as string[]).includes(s)) throw invalidRequest(`status ${JSON.stringify(s.slice(0, 40))} is not one of ${TASK_STATUSES.join(", ")}`, "status");
  }
  const rawLimit = one("limit");
  const limit = rawLimit === undefined ? 50 : Number(rawLimit);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_TASK_PAGE) throw invalidRequest(`limit must be an integer from 1 to ${MAX_TASK_PAGE}`, "limit");
  return { agent: one("agent"), statuses: statuses as TaskStatus[] | undefined, limit, cursor: one("cursor") };
}
