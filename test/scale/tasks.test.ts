// Detached agent tasks over 3 replicas on one PostgreSQL and Redis: a task is dispatched on one
// replica, polled on another and answered or cancelled through a third; the dispatch capacity is
// counted over every replica; and when the replica running a task is killed (-9) mid-run, another
// replica ends the task (failed/interrupted) and the tool it was running is never called again.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { missingServices } from "../helpers/services";
import { until } from "../helpers/http";
import { scriptedProvider, lastTool, type ScriptedProvider } from "../agents/scripted";
import { startCluster, startShared, startReplica, startChildReplica, everywhere, ADMIN, type Replica, type Shared, type ChildReplica } from "./cluster";
import { toolStandIn, type ToolStandIn } from "./tool-stand-in";

const missing = missingServices();
if (missing) console.warn(`test/scale skipped: ${missing}`);

async function call(url: string, method: string, p: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(url + p, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, json: await res.json().catch(() => null) };
}

/** Poll an async condition every 50 ms until it holds (throws after timeoutMs). */
async function eventually(cond: () => Promise<boolean> | boolean, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error("condition not reached");
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Poll GET /tasks/{id} on `url` until `cond` holds. */
async function pollOn(url: string, id: string, cond: (t: any) => boolean, timeoutMs = 20_000): Promise<any> {
  let last: any;
  await eventually(async () => {
    const r = await call(url, "GET", `/tasks/${id}`);
    last = r.json;
    return r.status === 200 && cond(r.json);
  }, timeoutMs).catch(() => {
    throw new Error(`task ${id} never reached the condition on ${url}; last: ${JSON.stringify(last)}`);
  });
  return last;
}

const agent = (name: string, spec: Record<string, unknown> = {}) => ({ op: "upsert" as const, kind: "Agent", name, owner: "config:test", spec: { instructions: `You are ${name}.`, defaultModel: name, maxIterations: 4, ...spec } });

describe.skipIf(!!missing)("tasks across 3 replicas", () => {
  let rs: Replica[] = [];
  let stop: (() => Promise<void>) | undefined;
  let up: ScriptedProvider;

  beforeAll(async () => {
    up = await scriptedProvider();
    up.script("asks", (b, turn) => (turn === 0 ? { calls: [{ name: "clarify", args: { question: "Which city?" } }] } : { text: `answer: ${lastTool(b)}` }));
    up.script("quick", () => ({ text: "done" }));
    ({ rs, stop } = await startCluster(3));
    const provider = { type: "openai", baseUrl: up.baseUrl, timeoutSeconds: 10, models: [{ name: "asks", inputPerMillion: 1, outputPerMillion: 2 }, { name: "quick", inputPerMillion: 1, outputPerMillion: 2 }] };
    await rs[0].svc.svc.store.write([{ op: "upsert", kind: "Provider", name: "scripted", owner: "config:test", spec: provider }, agent("asks"), agent("quick")]);
    await everywhere(rs, "Agent", "asks");
    await everywhere(rs, "Agent", "quick");
    await everywhere(rs, "Provider", "scripted");
  }, 120_000);

  // tearing down three replicas (each drains its listener and ends its task leases), PostgreSQL
  // and Redis: once seen to take over a minute on a loaded machine. Two causes found and fixed: the
  // replicas share this process's upstream pools, and the first replica's shutdown waited for the
  // others' model calls until their provider timeout (engines/providers/http.ts closePools); and a
  // store transaction begun as the database closed was stranded, holding the pool's end for ever
  // (engines/store/pg-pool.ts, prisma/resource-store.ts close)
  afterAll(async () => {
    await stop?.();
    await up?.close();
  }, 180_000);

  it("dispatched on replica 1, polled on 2, clarified on 3: the runner continues with the answer", async () => {
    const d = await rs[0].api("POST", "/agents/asks/dispatch", { prompt: "weather?" });
    expect(d.status).toBe(202);
    const waiting = await pollOn(rs[1].url, d.json.id, (t) => t.status === "input_required");
    expect(waiting.pending).toMatchObject({ kind: "clarify", question: "Which city?" });
    const a = await rs[2].api("POST", `/tasks/${d.json.id}/clarify`, { response: "Paris" });
    expect(a.status).toBe(200);
    const done = await pollOn(rs[1].url, d.json.id, (t) => t.status === "completed");
    expect(done.result).toMatchObject({ output: "answer: Paris" });
    // answered once: a second answer through yet another replica is a conflict
    const late = await rs[1].api("POST", `/tasks/${d.json.id}/clarify`, { response: "Rome" });
    expect(late.status).toBe(409);
  });

  it("what the runner shows, every replica shows: finished tasks with their whole step log, in order", async () => {
    // room for all six at once: with the default capacity of 4 the sixth was accepted only if two
    // of the first had finished by the time it was admitted, which a loaded machine did not always
    // manage (429); the capacity itself is the test below
    await rs[0].svc.svc.store.write([{ op: "upsert", kind: "Server", name: "main", owner: "config:test", spec: { limits: { maxConcurrentDispatch: 8 } } }]);
    await until(() => rs.every((r) => r.svc.svc.server.limits?.maxConcurrentDispatch === 8), 10_000);
    const ds = await Promise.all(Array.from({ length: 6 }, (_, i) => rs[0].api("POST", "/agents/quick/dispatch", { prompt: `quick ${i}` })));
    expect(ds.map((d) => d.status)).toEqual(Array(6).fill(202));
    for (const d of ds) {
      // polled on the runner until finished, then at once on the others: the same task
      const mine = await pollOn(rs[0].url, d.json.id, (t) => t.finished_at !== null);
      expect(mine).toMatchObject({ status: "completed", result: { output: "done" } });
      for (const r of rs.slice(1)) {
        const there = (await call(r.url, "GET", `/tasks/${d.json.id}`)).json;
        expect(there).toMatchObject({ status: "completed", finished_at: mine.finished_at, result: { output: "done" } });
        expect(there.recent_activity.map((s: any) => [s.seq, s.type, s.status])).toEqual(mine.recent_activity.map((s: any) => [s.seq, s.type, s.status]));
      }
      expect(mine.recent_activity.map((s: any) => s.seq)).toEqual(mine.recent_activity.map((_: unknown, i: number) => i));
      expect(mine.recent_activity.filter((s: any) => s.type === "status").map((s: any) => s.status)).toEqual(["queued", "running", "completed"]);
    }
  });

  it("dispatched on replica 1, cancelled on 3: it ends cancelled, seen from 2", async () => {
    const d = await rs[0].api("POST", "/agents/asks/dispatch", { prompt: "weather?" });
    await pollOn(rs[1].url, d.json.id, (t) => t.status === "input_required");
    const c = await rs[2].api("DELETE", `/tasks/${d.json.id}`);
    expect(c.status).toBe(200);
    expect(c.json.cancel_requested).toBe(true);
    const t = await pollOn(rs[1].url, d.json.id, (t) => t.finished_at !== null);
    expect(t).toMatchObject({ status: "cancelled", reason: "cancelled_by_request" });
  });

  it("20 dispatches spread over 3 replicas against a capacity of 4: 4 accepted, never more unfinished", async () => {
    await rs[0].svc.svc.store.write([{ op: "upsert", kind: "Server", name: "main", owner: "config:test", spec: { limits: { maxConcurrentDispatch: 4 } } }]);
    await until(() => rs.every((r) => r.svc.svc.server.limits?.maxConcurrentDispatch === 4), 10_000);
    const out = await Promise.all(Array.from({ length: 20 }, (_, i) => rs[i % 3].api("POST", "/agents/asks/dispatch", { prompt: `task ${i}` })));
    const accepted = out.filter((r) => r.status === 202);
    expect(accepted).toHaveLength(4);
    expect(out.filter((r) => r.status === 429).every((r) => r.json.error.code === "capacity_exceeded")).toBe(true);
    expect(out.filter((r) => r.status !== 202 && r.status !== 429)).toEqual([]);
    const unfinished = () => rs[0].svc.svc.db.prisma.agentTask.count({ where: { status: { in: ["queued", "running", "input_required"] } } });
    expect(await unfinished()).toBe(4);
    // a slot freed on one replica is usable from another
    await rs[2].api("DELETE", `/tasks/${accepted[0].json.id}`);
    await pollOn(rs[2].url, accepted[0].json.id, (t) => t.status === "cancelled");
    const again = await rs[1].api("POST", "/agents/asks/dispatch", { prompt: "one more" });
    expect(again.status).toBe(202);
    expect(await unfinished()).toBe(4);
    for (const t of [...accepted.slice(1), again]) await rs[0].api("DELETE", `/tasks/${t.json.id}`);
  });
});

describe.skipIf(!!missing)("the replica running a task is killed", () => {
  let shared: Shared;
  let child: ChildReplica | undefined;
  const rs: Replica[] = [];
  let up: ScriptedProvider;
  let tool: ToolStandIn;

  beforeAll(async () => {
    up = await scriptedProvider();
    up.script("worker", (_b, turn) => (turn === 0 ? { calls: [{ name: "standin_work", args: {} }] } : { text: "finished" }));
    tool = await toolStandIn();
    shared = await startShared();
    child = await startChildReplica(shared.env); // first up: holds the lease, so it connects the tool service
    rs.push(await startReplica(), await startReplica());
    const provider = { type: "openai", baseUrl: up.baseUrl, timeoutSeconds: 10, models: [{ name: "worker", inputPerMillion: 1, outputPerMillion: 2 }] };
    await rs[0].svc.svc.store.write([
      { op: "upsert", kind: "Provider", name: "scripted", owner: "config:test", spec: provider },
      { op: "upsert", kind: "McpServer", name: "standin", owner: "config:test", spec: { transport: "http", url: tool.url } },
      agent("worker", { capabilities: ["tools"], toolPolicy: { allow: ["standin_work"] } }), // a plain name: Ready only once the tool is in the catalog
    ]);
    await everywhere(rs, "Agent", "worker");
    await eventually(async () => (await call(child!.url, "GET", "/agents")).json?.data?.find?.((a: any) => a.id === "worker")?.ready === true, 30_000);
  }, 120_000);

  afterAll(async () => {
    await child?.kill9().catch(() => undefined);
    for (const r of rs) await r.svc.stop().catch(() => undefined);
    await shared?.stop();
    await tool?.close();
    await up?.close();
  });

  it("kill -9 mid-run: another replica ends the task within 10 s, and its tool ran once", async () => {
    const d = await call(child!.url, "POST", "/agents/worker/dispatch", { prompt: "work" });
    expect(d.status).toBe(202);
    await until(() => tool.calls.get("work") === 1, 15_000).catch(async (e) => {
      throw new Error(`the tool was not called: ${JSON.stringify((await call(child!.url, "GET", `/tasks/${d.json.id}`)).json)}; ${e}`);
    });
    await pollOn(rs[0].url, d.json.id, (t) => t.status === "running");
    await child!.kill9();
    const t = await pollOn(rs[1].url, d.json.id, (t) => t.finished_at !== null, 10_000);
    expect(t).toMatchObject({ status: "failed", reason: "interrupted" });
    expect(t.recent_activity.at(-1)).toMatchObject({ type: "status", status: "failed", reason: "interrupted" });
    // a few more heartbeats and sweeps of the survivors (one a second): nobody runs it again
    const beat = (await rs[0].svc.svc.db.prisma.agentTaskStep.count({ where: { taskId: d.json.id } }));
    await eventually(async () => (await rs[0].svc.svc.db.prisma.agentTask.count({ where: { status: "running" } })) === 0, 5_000);
    await new Promise((r) => setTimeout(r, 2500));
    expect(tool.calls.get("work")).toBe(1);
    expect(await rs[0].svc.svc.db.prisma.agentTaskStep.count({ where: { taskId: d.json.id } })).toBe(beat);
  });
});
