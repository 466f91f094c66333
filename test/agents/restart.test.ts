// Durability: a task running when svc stops, or left running by a process that died, is marked
// failed with reason "interrupted" on the same home — never silently lost.
import { describe, it, expect, afterAll } from "vitest";
import path from "node:path";
import Database from "better-sqlite3";
import { startAgentEnv, type AgentEnv } from "./env";
import { tempDir } from "../helpers/svc";

let env: AgentEnv | undefined;
afterAll(async () => {
  await env?.stop();
});

async function boot(home: string) {
  const e = await startAgentEnv({ home, models: ["slow"] });
  e.up.script("slow", () => ({ calls: [{ name: "everything_trigger-long-running-operation", args: { duration: 60, steps: 60 } }] }));
  await e.agent("slow");
  await e.ready("Agent", "slow");
  return e;
}

describe("restart", () => {
  it("a running task becomes failed/interrupted across a stop and start; a crashed process's task too", async () => {
    const home = await tempDir("svc-agents-restart-");
    env = await boot(home);
    const d = await env.api("POST", "/agents/slow/dispatch", { prompt: "long job", title: "survives?" });
    expect(d.status).toBe(202);
    const id = d.json.id;
    await env.poll(id, (t) => t.status === "running" && /running tool/.test(t.current_step ?? ""));
    await env.stop();
    env = undefined;

    // a task a crashed process left "running" (written straight into the store file)
    const db = new Database(path.join(home, "svc.db"));
    const now = new Date().toISOString();
    db.prepare(`INSERT INTO AgentTask (id, agent, prompt, status, messages, createdAt, updatedAt) VALUES ('task_crashed', 'slow', 'p', 'running', '[]', ?, ?)`).run(now, now);
    db.close();

    env = await boot(home);
    const t = await env.api("GET", `/tasks/${id}`);
    expect(t.status).toBe(200);
    expect(t.json).toMatchObject({ id, title: "survives?", status: "failed", reason: "interrupted" });
    expect(t.json.recent_activity.some((s: any) => s.type === "tool_call" && s.tool === "everything_trigger-long-running-operation")).toBe(true);
    expect(t.json.recent_activity.at(-1)).toMatchObject({ type: "status", status: "failed", reason: "interrupted" });
    const crashed = await env.api("GET", "/tasks/task_crashed");
    expect(crashed.json).toMatchObject({ status: "failed", reason: "interrupted" });
    expect(crashed.json.finished_at).toBeTruthy();
  });
});
