// Agents and tasks (spec/local-server.md "Agents and tasks"): discovery, synchronous runs (JSON
// or SSE), detached tasks polled by id. Shapes live here; the loop is engines/agents.
//   GET    /agents                   custom agents with metadata and readiness
//   POST   /agents/{id}/run          {prompt | input | messages, model?, tool_choice?, stream?, conversation_id?}
//   POST   /agents/{id}/dispatch     {prompt, title?, model?, tool_choice?} -> 202 {id, status, poll_url}
//   GET    /tasks/{id}               status, progress, current step, recent activity, result
//   DELETE /tasks/{id}               request cancellation (idempotent; returns the current state)
//   POST   /tasks/{id}/clarify       {response} (or {approve: bool}); 409 unless input_required
// Remote (non-loopback) run and dispatch must come through the secure channel (426
// secure_channel_required) with a key that has the agents:run / agents:dispatch scope (a key
// without scopes: permissions.actions naming the action, or "*"); an agent-audience key only
// reaches its own agent. A task is visible to the key that dispatched it (and the admin key, and for
// reading to a team or organization key with view_all_usage); a task dispatched without a key, to
// loopback callers only. The list, GET /tasks, is api/routes/tasks.ts.
import Router from "@koa/router";
import type { Static } from "@sinclair/typebox";
import type { Context } from "koa";
import type { Svc } from "../../engines/svc";
import type { ChatMessage, ToolChoice } from "../../engines/chat/types";
import type { LoopEvent } from "../../engines/agents/types";
import type { Agents, RunResult } from "../../engines/agents";
import { SvcError, invalidRequest } from "../../engines/errors";
import { jsonBody } from "../body-schema";
import { AgentRunBody, ClarifyBody, DispatchBody } from "../../schemas/api/bodies";
import { openAIBody, rateHeaders } from "../errors";
import { runBody, taskBody, taskPath } from "../task-shapes";
import { callerFrom, setHeaders } from "../caller";
import { requireSecureIfRemote } from "../secure-mark";
import { clientCancellation, EventStream, sseEvent } from "../sse";
import { inTaskScope, taskScopeOf } from "../../engines/agents/task-list";

const readRun = jsonBody("post", "/agents/:id/run", AgentRunBody);
const readDispatch = jsonBody("post", "/agents/:id/dispatch", DispatchBody);
const readClarify = jsonBody("post", "/tasks/:id/clarify", ClarifyBody);

function agentsOf(svc: Svc): Agents {
  const a = svc.engines.agents;
  if (!a) throw new SvcError("unavailable", "model_unavailable", "agents are unavailable: the agents engine is not running");
  return a;
}

/** Who is calling (the gate's identify: 401 for a bad key, 403 for a read_only one); null on
 * unauthenticated loopback. */
function authenticate(svc: Svc, ctx: Context) {
  const gw = svc.engines.gateway;
  if (!gw) throw new SvcError("unavailable", "model_unavailable", "agents are unavailable: the gateway engine is not running");
  const key = gw.gate.identify(callerFrom(ctx));
  if (key) ctx.state.keyId = key.id;
  return key;
}

/** A string field the body schema checked (null is absent). */
const str = (v: string | null | undefined): string | undefined => v ?? undefined;

/** tool_choice as the body schema accepts it, in the engine's shape. */
function toolChoice(v: Static<typeof AgentRunBody>["tool_choice"]): ToolChoice | undefined {
  if (v === undefined || v === null || typeof v === "string") return v ?? undefined;
  return { name: "function" in v ? v.function.name : v.name };
}

/** The conversation so far; it must end with a user message (a rule across fields). */
function inputMessages(b: Static<typeof AgentRunBody>): ChatMessage[] {
  const prompt = str(b.prompt) ?? str(b.input);
  // a blank prompt is a client mistake (dispatch refuses it too), not a model call with no question
  if (prompt !== undefined && !prompt.trim()) throw invalidRequest("prompt must not be empty", b.prompt !== undefined && b.prompt !== null ? "prompt" : "input");
  const out: ChatMessage[] = (b.messages ?? []).map((m) => ({ role: m.role, content: m.content }));
  if (prompt !== undefined) out.push({ role: "user", content: prompt });
  if (!out.length || out[out.length - 1].role !== "user") throw invalidRequest("give the agent a prompt (prompt, input, or messages ending with a user message)", "prompt");
  return out;
}

/** An SSE frame per loop event (the `done` frame carries the run result). */
function frame(ev: LoopEvent): string | undefined {
  switch (ev.type) {
    case "step":
      return sseEvent("step", { iteration: ev.iteration, max_iterations: ev.maxIterations });
    case "delta":
      return sseEvent("delta", { text: ev.text });
    case "tool_call":
      return sseEvent("tool_call", { id: ev.id, name: ev.name, arguments: ev.arguments, mode: ev.mode });
    case "tool_progress":
      return sseEvent("tool_progress", { id: ev.id, name: ev.name, progress: ev.progress, total: ev.total ?? null, message: ev.message ?? null });
    case "tool_result":
      return sseEvent("tool_result", { id: ev.id, name: ev.name, is_error: ev.isError, outcome: ev.outcome, content: ev.content });
    default:
      return undefined; // text (the deltas carried it) and input_required (done carries pending)
  }
}

export default function routes(svc: Svc): Router {
  const r = new Router();

  r.get("/agents", (ctx) => {
    const a = agentsOf(svc);
    authenticate(svc, ctx); // remote discovery needs a valid key
    ctx.body = { object: "list", data: a.list() };
  });

  r.post("/agents/:id/run", async (ctx) => {
    const a = agentsOf(svc);
    const caller = callerFrom(ctx);
    requireSecureIfRemote(ctx, caller.loopback, "agent run");
    a.authorize(caller, "agents:run", ctx.params.id);
    const b = await readRun(ctx);
    const conversationId = str(b.conversation_id) ?? (ctx.get("x-svc-conversation-id").trim().slice(0, 200) || undefined);
    const input = { messages: inputMessages(b), model: str(b.model), toolChoice: toolChoice(b.tool_choice), conversationId };
    a.resolve(ctx.params.id, input.model); // 404 / 503 before anything starts
    const cancel = clientCancellation(ctx);
    if (!b.stream) {
      ctx.body = runBody(await a.run(ctx.params.id, caller, input, { stream: false, cancel }));
      return;
    }
    await streamRun(ctx, a, caller, input, cancel);
  });

  r.post("/agents/:id/dispatch", async (ctx) => {
    const a = agentsOf(svc);
    const caller = callerFrom(ctx);
    requireSecureIfRemote(ctx, caller.loopback, "agent dispatch");
    const key = a.authorize(caller, "agents:dispatch", ctx.params.id);
    const b = await readDispatch(ctx);
    const prompt = b.prompt;
    // the schema refuses "", not "   ": a blank prompt starts no task either
    if (!prompt.trim()) throw invalidRequest("prompt (a non-empty string) is required", "prompt");
    const title = str(b.title);
    const model = str(b.model);
    const idem = ctx.get("idempotency-key").trim();
    if (idem.length > 200) throw invalidRequest("Idempotency-Key is longer than 200 characters", "Idempotency-Key");
    const { spec, model: resolved } = a.resolve(ctx.params.id, model);
    // a dispatch is a request at the gate like a tool call: policy (agents:dispatch on the model
    // and the providers that serve it), rate limits, max_requests, an exhausted budget, audit;
    // the task's model calls then meet the gate again, each with its price
    const gw = svc.engines.gateway!;
    const call = { action: "agents:dispatch", scope: "agents:dispatch" as const, audit: "agents.dispatch", model: resolved, targets: gw.router.targets(resolved), metered: true, spendMicros: 0, metadata: { agent_id: ctx.params.id } };
    const { view, created } = await gw.gate.call(caller, call, (v) => {
      setHeaders(ctx, rateHeaders(v.rate));
      return a.tasks.dispatch({
        agent: ctx.params.id,
        spec,
        model: resolved,
        prompt,
        title,
        toolChoice: toolChoice(b.tool_choice),
        caller: { ...caller, route: "/agents/:id/dispatch" },
        keyId: key?.id ?? null,
        idempotencyKey: idem || undefined,
      });
    });
    ctx.status = created ? 202 : 200;
    if (!created) ctx.set("idempotent-replayed", "true");
    ctx.set("location", taskPath(view.id));
    ctx.body = taskBody(view);
  });

  /** The task if this caller may see it; 404 otherwise (no hint that it exists). Reading follows
   * the task list's rights (a team or organization key with view_all_usage reads its members'
   * tasks: engines/agents/task-list.ts); cancel and clarify stay with the owner and the admin key. */
  const visibleTask = async (ctx: Context, read = false) => {
    const a = agentsOf(svc);
    const caller = callerFrom(ctx);
    const key = authenticate(svc, ctx);
    const t = await a.tasks.get(ctx.params.id);
    const mayView = t && ((t.ownerKeyId ? !!key && (key.id === t.ownerKeyId || key.role === "admin") : caller.loopback)
      || (read && inTaskScope(taskScopeOf(svc.engines.gateway?.keys.all() ?? [], key, caller.loopback), t.ownerKeyId)));
    if (!t || !mayView) throw new SvcError("not_found", "not_found", `task ${JSON.stringify(ctx.params.id)} does not exist`);
    return { a, t };
  };

  r.get("/tasks/:id", async (ctx) => {
    ctx.body = taskBody((await visibleTask(ctx, true)).t.view);
  });

  r.delete("/tasks/:id", async (ctx) => {
    const { a } = await visibleTask(ctx);
    ctx.body = taskBody(await a.tasks.cancel(ctx.params.id));
  });

  r.post("/tasks/:id/clarify", async (ctx) => {
    const { a } = await visibleTask(ctx);
    const b = await readClarify(ctx);
    let approve: boolean | undefined = typeof b.approve === "boolean" ? b.approve : undefined;
    const text = str(b.response);
    if (approve === undefined && text !== undefined) {
      const w = text.trim().toLowerCase();
      if (["approve", "approved", "yes", "allow"].includes(w)) approve = true;
      else if (["deny", "denied", "no", "reject"].includes(w)) approve = false;
    }
    if (text === undefined && approve === undefined) throw invalidRequest("response (a string) is required", "response");
    ctx.body = taskBody(await a.tasks.clarify(ctx.params.id, { text, approve }));
  });

  return r;
}

/** Stream a run as SSE. Opening waits for the first event after `step`, so a refusal of the first
 * model call (401, 402 budget, 429, …) is still a plain HTTP error with its status. */
async function streamRun(ctx: Context, a: Agents, caller: ReturnType<typeof callerFrom>, input: Parameters<Agents["run"]>[2], cancel: ReturnType<typeof clientCancellation>) {
  let stream: EventStream | null = null;
  const held: string[] = [];
  const send = async (chunk: string) => {
    if (!stream) {
      stream = new EventStream(ctx, "sse");
      for (const h of held.splice(0)) await stream.write(h);
    }
    await stream.write(chunk);
  };
  let result: RunResult;
  try {
    result = await a.run(ctx.params.id, caller, input, {
      stream: true,
      cancel,
      emit: async (ev) => {
        const f = frame(ev);
        if (!f) return;
        if (!stream && ev.type === "step") held.push(f);
        else await send(f);
      },
    });
  } catch (e: any) {
    if (!stream) throw e; // nothing sent yet: a normal error response
    const g = e instanceof SvcError ? e : new SvcError("internal", "internal_error", "the agent run failed");
    await (stream as EventStream).write(sseEvent("error", openAIBody(g)));
    (stream as EventStream).end();
    return;
  }
  await send(sseEvent("done", runBody(result)));
  (stream as unknown as EventStream).end();
}
