// Detached tasks over 2 replicas on one PostgreSQL (shared mode): a question answered through two
// replicas at once is answered once (the other gets 409), an answer never carries over to the
// task's next question, and an Idempotency-Key repeated through a replica that does not run the
// task shows the task as it is now. Skipped without PostgreSQL 15 / Redis (test/helpers/services.ts).
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { missingServices } from "../helpers/services";
import { scriptedProvider, lastTool, type ScriptedProvider } from "./scripted";
import { startCluster, everywhere, ADMIN, type Replica } from "../scale/cluster";

const missing = missingServices();
if (missing) console.warn(`test/agents/shared-tasks skipped: ${missing}`);

async function pollOn(r: Replica, id: string, cond: (t: any) => boolean, timeoutMs = 20_000): Promise<any> {
  const end = Date.now() + timeoutMs;
  let last: any;
  for (;;) {
    const g = await r.api("GET", `/tasks/${id}`);
    last = g.json;
    if (g.status === 200 && cond(last)) return last;
    if (Date.now() > end) throw new Error(`task ${id} never reached the condition on ${r.url}; last: ${JSON.stringify(last)}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

const agent = (name: string) => ({ op: "upsert" as const, kind: "Agent", name, owner: "config:test", spec: { instructions: `You are ${name}.`, defaultModel: name, maxIterations: 6 } });

describe.skipIf(!!missing)("tasks on 2 replicas", () => {
  let rs: Replica[] = [];
  let stop: (() => Promise<void>) | undefined;
  let up: ScriptedProvider;

  beforeAll(async () => {
    up = await scriptedProvider();
    // two questions, then an answer naming both replies
    up.script("two", (b, turn) => {
      if (turn === 0) return { calls: [{ name: "clarify", args: { question: "Q1?" } }] };
      if (turn === 1) return { calls: [{ name: "clarify", args: { question: "Q2?" } }] };
      const replies = b.messages.filter((m) => m.role === "tool").map((m) => m.content);
      return { text: `replies: ${replies.join(" / ")}` };
    });
    up.script("asks", (b, turn) => (turn === 0 ? { calls: [{ name: "clarify", args: { question: "Which city?" } }] } : { text: `answer: ${lastTool(b)}` }));
    ({ rs, stop } = await startCluster(2));
    const provider = { type: "openai", baseUrl: up.baseUrl, timeoutSeconds: 10, models: [{ name: "two", inputPerMillion: 1, outputPerMillion: 2 }, { name: "asks", inputPerMillion: 1, outputPerMillion: 2 }] };
    await rs[0].svc.svc.store.write([{ op: "upsert", kind: "Provider", name: "scripted", owner: "config:test", spec: provider }, agent("two"), agent("asks")]);
    await everywhere(rs, "Agent", "two");
    await everywhere(rs, "Agent", "asks");
    await everywhere(rs, "Provider", "scripted");
  }, 120_000);

  afterAll(async () => {
    await stop?.();
    await up?.close();
  }, 180_000);

  it("a question answered through the other replica, then through the runner: the second answer is 409, and the next question waits for its own answer", async () => {
    const d = await rs[0].api("POST", "/agents/two/dispatch", { prompt: "go" });
    expect(d.status).toBe(202);
    const id = d.json.id;
    await pollOn(rs[1], id, (t) => t.status === "input_required" && t.pending?.question === "Q1?");
    // through replica 2 (the row keeps the answer until the runner's heartbeat takes it) ...
    const first = await rs[1].api("POST", `/tasks/${id}/clarify`, { response: "from-2" });
    expect(first.status).toBe(200);
    // ... and at once through the runner, which still holds the question in memory
    const second = await rs[0].api("POST", `/tasks/${id}/clarify`, { response: "from-1" });
    expect(second.status).toBe(409);
    // the task reaches Q2 and stays there: no earlier answer is taken for it
    const q2 = await pollOn(rs[1], id, (t) => t.status === "input_required" && t.pending?.question === "Q2?");
    expect(q2.pending.kind).toBe("clarify");
    await new Promise((res) => setTimeout(res, 2500)); // a couple of the runner's heartbeats
    expect((await rs[0].api("GET", `/tasks/${id}`)).json).toMatchObject({ status: "input_required", pending: { question: "Q2?" } });
    expect((await rs[1].api("POST", `/tasks/${id}/clarify`, { response: "second-answer" })).status).toBe(200);
    const done = await pollOn(rs[1], id, (t) => t.finished_at !== null);
    expect(done).toMatchObject({ status: "completed", result: { output: "replies: from-2 / second-answer" } });
  });

  it("an answer through the runner itself still continues the task (shared mode)", async () => {
    const d = await rs[0].api("POST", "/agents/asks/dispatch", { prompt: "weather?" });
    const id = d.json.id;
    await pollOn(rs[0], id, (t) => t.status === "input_required");
    expect((await rs[0].api("POST", `/tasks/${id}/clarify`, { response: "Paris" })).status).toBe(200);
    expect((await rs[1].api("POST", `/tasks/${id}/clarify`, { response: "Rome" })).status).toBe(409);
    const done = await pollOn(rs[1], id, (t) => t.finished_at !== null);
    expect(done).toMatchObject({ status: "completed", result: { output: "answer: Paris" } });
  });

  it("an Idempotency-Key repeated through the other replica shows the task's current state, not the first repeat's", async () => {
    const headers = { authorization: `Bearer ${ADMIN}`, "content-type": "application/json", "idempotency-key": "shared-k1" };
    const send = (r: Replica) => fetch(`${r.url}/agents/asks/dispatch`, { method: "POST", headers, body: JSON.stringify({ prompt: "weather?" }) }).then(async (res) => ({ status: res.status, json: (await res.json()) as any }));
    const d = await send(rs[0]);
    expect(d.status).toBe(202);
    await pollOn(rs[0], d.json.id, (t) => t.status === "input_required");
    const again = await send(rs[1]);
    expect(again).toMatchObject({ status: 200, json: { id: d.json.id, status: "input_required" } });
    expect((await rs[0].api("POST", `/tasks/${d.json.id}/clarify`, { response: "Oslo" })).status).toBe(200);
    await pollOn(rs[1], d.json.id, (t) => t.status === "completed");
    const later = await send(rs[1]);
    expect(later).toMatchObject({ status: 200, json: { id: d.json.id, status: "completed", result: { output: "answer: Oslo" } } });
  });
});
