// Client mistakes on runs, dispatches and answers are 400s that change nothing, and a task reads
// the same finished as it did while it ran (engines/agents/loop.ts checkAnswer, task-records.ts,
// api/routes/agents.ts).
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { startAgentEnv, type AgentEnv } from "./env";
import { lastTool } from "./scripted";

let env: AgentEnv;

beforeAll(async () => {
  env = await startAgentEnv({ models: ["asks", "quick"] });
  env.up.script("asks", (b, turn) => (turn === 0 ? { calls: [{ name: "clarify", args: { question: "Which city?" } }] } : { text: `answer: ${lastTool(b)}` }));
  env.up.script("quick", () => ({ text: "done" }));
  await env.agent("asks");
  await env.agent("quick");
  // no maxIterations: the schema's default (8) applies
  await env.agent("nobudget", { defaultModel: "quick", maxIterations: undefined });
  await env.ready("Agent", "nobudget");
}, 60_000);
afterAll(async () => {
  await env?.stop();
});

describe("answers and bodies", () => {
  it("{approve: true} to a question (not an approval) is 400; the question stays pending and a text answer continues", async () => {
    const d = await env.api("POST", "/agents/asks/dispatch", { prompt: "weather?" });
    expect(d.status).toBe(202);
    await env.poll(d.json.id, (t) => t.status === "input_required");
    const wrong = await env.api("POST", `/tasks/${d.json.id}/clarify`, { approve: true });
    expect(wrong.status).toBe(400);
    expect(wrong.json.error).toMatchObject({ code: "invalid_request", param: "response" });
    const still = await env.api("GET", `/tasks/${d.json.id}`);
    expect(still.json).toMatchObject({ status: "input_required", pending: { kind: "clarify", question: "Which city?" } });
    expect((await env.api("POST", `/tasks/${d.json.id}/clarify`, { response: "Paris" })).status).toBe(200);
    const done = await env.poll(d.json.id, (t) => t.status === "completed");
    expect(done.result.output).toBe("answer: Paris");
  });

  it("a blank prompt is 400 for a run and a dispatch, and calls no model", async () => {
    const before = env.up.requests.length;
    for (const body of [{ prompt: "" }, { prompt: "   " }, { input: " \n" }]) {
      const r = await env.api("POST", "/agents/quick/run", body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.json.error.code).toBe("invalid_request");
    }
    const d = await env.api("POST", "/agents/quick/dispatch", { prompt: "   " });
    expect(d.status).toBe(400);
    expect(d.json.error).toMatchObject({ code: "invalid_request", param: "prompt" });
    expect(env.up.requests.length).toBe(before);
    expect(await env.svc.svc.db.prisma.agentTask.count({ where: { agent: "quick" } })).toBe(0);
  });

  it("a finished task shows the iteration budget it showed while running", async () => {
    const d = await env.api("POST", "/agents/nobudget/dispatch", { prompt: "go" });
    expect(d.status).toBe(202);
    expect(d.json.progress).toEqual({ iterations: 0, max_iterations: 8 });
    const t = await env.poll(d.json.id, (t) => t.status === "completed");
    expect(t.progress).toEqual({ iterations: 1, max_iterations: 8 });
  });
});
