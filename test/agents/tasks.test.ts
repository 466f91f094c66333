// Detached tasks: dispatch, poll, approvals, clarifications, cancellation while a real MCP tool
// runs, the concurrency limit, idempotent dispatch and retention, over the real HTTP routes.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { startAgentEnv, type AgentEnv } from "./env";
import { lastTool } from "./scripted";
import { until } from "../helpers/http";

let env: AgentEnv;
const M = ["worker", "approver", "asks", "slow", "looper"];

beforeAll(async () => {
  env = await startAgentEnv({ models: M });
  env.up.script("worker", (b, turn) => (turn === 0 ? { calls: [{ name: "everything_echo", args: { message: "work" } }] } : { text: `result: ${lastTool(b)}` }));
  env.up.script("approver", (b, turn) => (turn === 0 ? { calls: [{ name: "everything_echo", args: { message: "sensitive" } }] } : { text: `after approval: ${lastTool(b)}` }));
  env.up.script("asks", (b, turn) => (turn === 0 ? { calls: [{ name: "clarify", args: { question: "Which city?" } }] } : { text: `answer: ${lastTool(b)}` }));
  env.up.script("slow", (b, turn) => (turn === 0 ? { calls: [{ name: "everything_trigger-long-running-operation", args: { duration: 60, steps: 120 } }] } : { text: "finished" }));
  await env.agent("worker");
  await env.agent("approver", { toolPolicy: { allow: ["everything_*"], requireApproval: ["everything_echo"] } });
  await env.agent("asks");
  env.up.script("looper", () => ({ calls: [{ name: "everything_echo", args: { message: "more" } }] }));
  await env.agent("slow");
  await env.agent("looper", { maxIterations: 2 });
  await env.ready("Agent", "slow");
}, 60_000);
afterAll(async () => {
  await env?.stop();
});

const dispatch = (agent: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  fetch(`${env.url}/agents/${agent}/dispatch`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${env.adminKey}`, ...headers }, body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, headers: r.headers, json: (await r.json()) as any }));

describe("detached tasks", () => {
  it("dispatch answers 202 {id, status, poll_url}; polling shows progress, activity and the result", async () => {
    const d = await dispatch("worker", { prompt: "do it", title: "first" });
    expect(d.status).toBe(202);
    expect(d.json).toMatchObject({ object: "task", agent: "worker", title: "first", poll_url: `/tasks/${d.json.id}` });
    expect(["queued", "running"]).toContain(d.json.status);
    expect(d.headers.get("location")).toBe(`/tasks/${d.json.id}`);
    const t = await env.poll(d.json.id, (t) => t.status === "completed");
    expect(t.result).toMatchObject({ output: "result: Echo: work", usage: { prompt_tokens: 40, completion_tokens: 20 } });
    expect(t.progress).toEqual({ iterations: 2, max_iterations: 6 });
    const types = t.recent_activity.map((s: any) => s.type);
    expect(types).toEqual(expect.arrayContaining(["step", "tool_call", "tool_result", "text", "status"]));
    expect(t.recent_activity.find((s: any) => s.type === "tool_result")).toMatchObject({ tool: "everything_echo", outcome: "ok", content: "Echo: work" });
    expect(t.recent_activity.at(-1)).toMatchObject({ type: "status", status: "completed" });
    // clarify is only for input_required
    const late = await env.api("POST", `/tasks/${d.json.id}/clarify`, { response: "x" });
    expect(late.status).toBe(409);
    expect(late.json.error.code).toBe("conflict");
  });

  it("approval round trip: an ask tool pauses in input_required; approve runs it, deny tells the model", async () => {
    const calls = () => env.tools.calls.get("everything_echo") ?? 0;
    const d = await dispatch("approver", { prompt: "echo something" });
    const waiting = await env.poll(d.json.id, (t) => t.status === "input_required");
    expect(waiting.pending).toMatchObject({ kind: "approval", tool: "everything_echo", arguments: { message: "sensitive" } });
    expect(waiting.current_step).toBe("waiting for approval of everything_echo");
    const n = calls();
    const a = await env.api("POST", `/tasks/${d.json.id}/clarify`, { response: "approve" });
    expect(a.status).toBe(200);
    const done = await env.poll(d.json.id, (t) => t.status === "completed");
    expect(done.result.output).toBe("after approval: Echo: sensitive");
    expect(calls()).toBe(n + 1);

    const d2 = await dispatch("approver", { prompt: "echo something" });
    await env.poll(d2.json.id, (t) => t.status === "input_required");
    const vague = await env.api("POST", `/tasks/${d2.json.id}/clarify`, { response: "hmm" });
    expect(vague.status).toBe(400);
    await env.api("POST", `/tasks/${d2.json.id}/clarify`, { approve: false });
    const denied = await env.poll(d2.json.id, (t) => t.status === "completed");
    expect(denied.result.output).toMatch(/after approval: The user rejected this call of everything_echo/);
    expect(calls()).toBe(n + 1);
  });

  it("clarify round trip: the built-in clarify tool pauses the task with the question; the answer continues it", async () => {
    const d = await dispatch("asks", { prompt: "weather?" });
    const waiting = await env.poll(d.json.id, (t) => t.status === "input_required");
    expect(waiting.pending).toMatchObject({ kind: "clarify", question: "Which city?" });
    const r = await env.api("POST", `/tasks/${d.json.id}/clarify`, { response: "Paris" });
    expect(r.status).toBe(200);
    expect(["running", "completed"]).toContain(r.json.status);
    const done = await env.poll(d.json.id, (t) => t.status === "completed");
    expect(done.result.output).toBe("answer: Paris");
  });

  it("DELETE cancels a task waiting in input_required: it ends cancelled, the pending tool never runs, a late answer is 409", async () => {
    const calls = () => env.tools.calls.get("everything_echo") ?? 0;
    const n = calls();
    const d = await dispatch("approver", { prompt: "echo something" });
    const waiting = await env.poll(d.json.id, (t) => t.status === "input_required");
    expect(waiting.pending).toMatchObject({ kind: "approval", tool: "everything_echo" });
    const c = await env.api("DELETE", `/tasks/${d.json.id}`);
    expect(c.status).toBe(200);
    expect(c.json.cancel_requested).toBe(true);
    const t = await env.poll(d.json.id, (t) => t.status === "cancelled");
    expect(t.reason).toBe("cancelled_by_request");
    expect(t.pending ?? null).toBeNull();
    const late = await env.api("POST", `/tasks/${d.json.id}/clarify`, { response: "approve" });
    expect(late.status).toBe(409);
    expect(late.json.error.code).toBe("conflict");
    expect(calls()).toBe(n);
    expect((await env.api("GET", `/tasks/${d.json.id}`)).json.status).toBe("cancelled");
  });

  it("DELETE cancels while a tool runs: the in-flight MCP call is aborted, the task ends cancelled; DELETE again is idempotent", async () => {
    const d = await dispatch("slow", { prompt: "take your time" });
    await env.poll(d.json.id, (t) => t.status === "running" && /running tool everything_trigger-long-running-operation/.test(t.current_step ?? ""));
    const c = await env.api("DELETE", `/tasks/${d.json.id}`);
    expect(c.status).toBe(200);
    expect(c.json.cancel_requested).toBe(true);
    const t = await env.poll(d.json.id, (t) => t.status === "cancelled");
    expect(t.reason).toBe("cancelled_by_request");
    expect(env.tools.aborted).toContain("everything_trigger-long-running-operation");
    const again = await env.api("DELETE", `/tasks/${d.json.id}`);
    expect(again.json).toMatchObject({ id: d.json.id, status: "cancelled" });
    expect((await env.api("DELETE", "/tasks/task_nope")).status).toBe(404);
  });

  it("capacity: exactly N of N+10 parallel dispatches are accepted; the rest get 429 capacity_exceeded with Retry-After", async () => {
    const N = 3;
    await env.apply([{ kind: "Server", name: "main", spec: { limits: { maxConcurrentDispatch: N } } }]);
    await until(() => env.svc.svc.server.limits?.maxConcurrentDispatch === N, 10_000);
    const all = await Promise.all(Array.from({ length: N + 10 }, () => dispatch("slow", { prompt: "x" })));
    const ok = all.filter((r) => r.status === 202);
    const refused = all.filter((r) => r.status === 429);
    expect(ok).toHaveLength(N);
    expect(refused).toHaveLength(10);
    for (const r of refused) {
      expect(r.json.error.code).toBe("capacity_exceeded");
      expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
    }
    const rows = await env.svc.svc.db.prisma.agentTask.count({ where: { agent: "slow", status: { in: ["queued", "running"] } } });
    expect(rows).toBe(N);
    for (const r of ok) await env.api("DELETE", `/tasks/${r.json.id}`);
    for (const r of ok) await env.poll(r.json.id, (t) => t.status === "cancelled");
    const after = await dispatch("worker", { prompt: "room again" });
    expect(after.status).toBe(202);
    await env.poll(after.json.id, (t) => t.status === "completed");
  });

  it("Idempotency-Key: a repeated dispatch (even in parallel) returns the first task", async () => {
    const [a, b] = await Promise.all([dispatch("worker", { prompt: "once" }, { "idempotency-key": "k-1" }), dispatch("worker", { prompt: "once" }, { "idempotency-key": "k-1" })]);
    expect(a.json.id).toBe(b.json.id);
    expect([a.status, b.status].sort()).toEqual([200, 202]);
    await env.poll(a.json.id, (t) => t.status === "completed");
    const later = await dispatch("worker", { prompt: "once" }, { "idempotency-key": "k-1" });
    expect(later.status).toBe(200);
    expect(later.headers.get("idempotent-replayed")).toBe("true");
    expect(later.json).toMatchObject({ id: a.json.id, status: "completed" });
    const other = await dispatch("worker", { prompt: "once" }, { "idempotency-key": "k-2" });
    expect(other.json.id).not.toBe(a.json.id);
    expect(await env.svc.svc.db.prisma.agentTask.count({ where: { idempotencyKey: { contains: "|worker|k-1" } } })).toBe(1);
  });

  it("a task is visible to the key that dispatched it (and admin), not to another key", async () => {
    const mine = await env.key({});
    const other = await env.key({});
    const d = await dispatch("worker", { prompt: "private" }, { authorization: `Bearer ${mine.secret}` });
    expect(d.status).toBe(202);
    await env.poll(d.json.id, (t) => t.status === "completed", 20_000, mine.secret);
    expect((await env.api("GET", `/tasks/${d.json.id}`, undefined, other.secret)).status).toBe(404);
    expect((await env.api("GET", `/tasks/${d.json.id}`)).status).toBe(200);
  });

  it("a task that uses up its iteration budget, or whose key's budget refuses a model call, ends failed naming why", async () => {
    const d = await dispatch("looper", { prompt: "forever" });
    const t = await env.poll(d.json.id, (t) => t.status === "failed");
    expect(t.reason).toBe("iteration_budget");
    expect(t.result.message).toMatch(/iteration budget reached: 2 model calls/);
    const poor = await env.key({ budget_limits: { daily: 0.000001 } });
    const p = await dispatch("worker", { prompt: "x" }, { authorization: `Bearer ${poor.secret}` });
    expect(p.status).toBe(202);
    const f = await env.poll(p.json.id, (t) => t.status === "failed", 20_000, poor.secret);
    expect(f).toMatchObject({ reason: "budget_exceeded", result: { error: { code: "budget_exceeded", status: 402 } } });
  });

  it("finished tasks are pruned after the retention", async () => {
    const d = await dispatch("worker", { prompt: "old" });
    await env.poll(d.json.id, (t) => t.status === "completed");
    const tasks = env.svc.svc.engines.agents!.tasks;
    expect(await tasks.prune(Date.now())).toBe(0);
    expect(await tasks.prune(Date.now() + 169 * 3_600_000)).toBeGreaterThan(0);
    expect((await env.api("GET", `/tasks/${d.json.id}`)).status).toBe(404);
    expect(await env.svc.svc.db.prisma.agentTaskStep.count({ where: { taskId: d.json.id } })).toBe(0);
  });
});
