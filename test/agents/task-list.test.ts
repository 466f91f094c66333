// GET /tasks: newest first, filtered by agent and status, paged with a cursor; each key sees its own
// tasks, a team or organization key with view_all_usage its members' (as GET /v1/usage), the
// admin key all of them, loopback callers also the tasks dispatched without a key.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { startEnv, type Env } from "../gateway/fixtures";
import { pollTask } from "../helpers/tasks";
import { scriptedProvider, lastTool, type ScriptedProvider } from "./scripted";

let env: Env;
let up: ScriptedProvider;
const keys: Record<string, { id: string; secret: string }> = {};
const ids: Record<string, string> = {};

async function dispatch(agent: string, prompt: string, secret?: string) {
  const r = await fetch(`${env.url}/agents/${agent}/dispatch`, { method: "POST", headers: { "content-type": "application/json", ...(secret ? { authorization: `Bearer ${secret}` } : {}) }, body: JSON.stringify({ prompt, title: prompt }) });
  const j: any = await r.json();
  if (r.status !== 202) throw new Error(`dispatch: ${r.status} ${JSON.stringify(j)}`);
  return j.id as string;
}

const list = (q: string, secret?: string) => (secret === undefined ? fetch(`${env.url}/tasks${q}`).then(async (r) => ({ status: r.status, json: (await r.json()) as any })) : env.api("GET", `/tasks${q}`, undefined, secret));
const idsOf = (j: any) => j.data.map((t: any) => t.id);

beforeAll(async () => {
  env = await startEnv();
  up = await scriptedProvider();
  up.script("asks", (b, turn) => (turn === 0 ? { calls: [{ name: "clarify", args: { question: "Which city?" } }] } : { text: `answer: ${lastTool(b)}` }));
  up.script("quick", () => ({ text: "done" }));
  await env.apply([{ kind: "Provider", name: "scripted", spec: { type: "openai", baseUrl: up.baseUrl, timeoutSeconds: 10, models: [{ name: "asks", inputPerMillion: 1, outputPerMillion: 2 }, { name: "quick", inputPerMillion: 1, outputPerMillion: 2 }] } }]);
  for (const a of ["asks", "quick"]) await env.apply([{ kind: "Agent", name: a, spec: { instructions: "help", defaultModel: a, maxIterations: 4 } }]);
  keys.ann = await env.key({ name: "ann", key_type: "user", organization_id: "o1", team_id: "t1", user_id: "ann" });
  keys.bob = await env.key({ name: "bob", key_type: "user", organization_id: "o1", team_id: "t1", user_id: "bob" });
  keys.cat = await env.key({ name: "cat", key_type: "user", organization_id: "o2", team_id: "t9", user_id: "cat" });
  keys.lead = await env.key({ name: "lead", key_type: "team", organization_id: "o1", team_id: "t1", permissions: { view_all_usage: true } });
  keys.org = await env.key({ name: "org2", key_type: "organization", organization_id: "o2", permissions: { view_all_usage: true } });
  keys.viewer = await env.key({ name: "viewer", access_level: "read_only" });
  // one at a time, so created_at orders them
  ids.ann1 = await dispatch("asks", "ann first", keys.ann.secret);
  await pollTask(env, ids.ann1, (t) => t.status === "input_required");
  ids.ann2 = await dispatch("quick", "ann second", keys.ann.secret);
  await pollTask(env, ids.ann2, (t) => t.status === "completed");
  ids.bob = await dispatch("quick", "bob", keys.bob.secret);
  await pollTask(env, ids.bob, (t) => t.status === "completed");
  ids.cat = await dispatch("quick", "cat", keys.cat.secret);
  await pollTask(env, ids.cat, (t) => t.status === "completed");
  ids.anon = await dispatch("quick", "anonymous");
  await pollTask(env, ids.anon, (t) => t.status === "completed");
}, 60_000);
afterAll(async () => {
  await env?.stop();
  await up?.close();
});

describe("GET /tasks", () => {
  it("lists a key's own tasks newest first, with their status and the key that dispatched them", async () => {
    const r = await list("", keys.ann.secret);
    expect(r.status).toBe(200);
    // ann's key on loopback also sees the task dispatched without a key
    expect(idsOf(r.json)).toEqual([ids.anon, ids.ann2, ids.ann1]);
    expect(r.json.data[1]).toMatchObject({ object: "task", agent: "quick", title: "ann second", status: "completed", key_id: keys.ann.id, key_name: "ann", poll_url: `/tasks/${ids.ann2}` });
    expect(r.json.data[2]).toMatchObject({ agent: "asks", status: "input_required", key_id: keys.ann.id, finished_at: null });
    expect(Date.parse(r.json.data[1].created_at)).toBeGreaterThanOrEqual(Date.parse(r.json.data[2].created_at));
    expect(r.json.data[0]).toMatchObject({ key_id: null, key_name: null });
    expect(r.json).toMatchObject({ has_more: false, next_cursor: null });
  });

  it("a team or organization key with view_all_usage sees its members' tasks; others see none of them", async () => {
    expect(idsOf((await list("", keys.lead.secret)).json)).toEqual([ids.anon, ids.bob, ids.ann2, ids.ann1]);
    expect(idsOf((await list("", keys.org.secret)).json)).toEqual([ids.anon, ids.cat]);
    expect(idsOf((await list("", keys.cat.secret)).json)).toEqual([ids.anon, ids.cat]);
    expect(idsOf((await list("")).json)).toEqual([ids.anon]); // loopback without a key
    expect(idsOf((await list("", env.adminKey)).json)).toEqual([ids.anon, ids.cat, ids.bob, ids.ann2, ids.ann1]);
    // the team key reads a member's task it listed, but cannot cancel it
    expect((await env.api("GET", `/tasks/${ids.bob}`, undefined, keys.lead.secret)).json).toMatchObject({ id: ids.bob, status: "completed" });
    expect((await env.api("DELETE", `/tasks/${ids.ann1}`, undefined, keys.lead.secret)).status).toBe(404);
    expect((await env.api("GET", `/tasks/${ids.ann1}`, undefined, keys.cat.secret)).status).toBe(404);
  });

  it("filters by agent and status", async () => {
    expect(idsOf((await list("?agent=asks", env.adminKey)).json)).toEqual([ids.ann1]);
    expect(idsOf((await list("?status=input_required", env.adminKey)).json)).toEqual([ids.ann1]);
    expect(idsOf((await list("?status=completed,input_required&agent=quick", keys.lead.secret)).json)).toEqual([ids.anon, ids.bob, ids.ann2]);
    expect(idsOf((await list("?status=cancelled", env.adminKey)).json)).toEqual([]);
  });

  it("pages with a cursor: every task once, in order", async () => {
    const seen: string[] = [];
    let q = "?limit=2";
    for (let i = 0; i < 5; i++) {
      const r = await list(q, env.adminKey);
      expect(r.status).toBe(200);
      expect(r.json.data.length).toBeLessThanOrEqual(2);
      seen.push(...idsOf(r.json));
      if (!r.json.has_more) break;
      q = `?limit=2&cursor=${encodeURIComponent(r.json.next_cursor)}`;
    }
    expect(seen).toEqual([ids.anon, ids.cat, ids.bob, ids.ann2, ids.ann1]);
  });

  it("refuses bad parameters with 400 and a read_only key with 403", async () => {
    for (const [q, param] of [["?status=sleeping", "status"], ["?limit=0", "limit"], ["?limit=x", "limit"], ["?cursor=nonsense", "cursor"]]) {
      const r = await list(q, env.adminKey);
      expect(r.status, q).toBe(400);
      expect(r.json.error).toMatchObject({ code: "invalid_request", param });
    }
    const ro = await list("", keys.viewer.secret);
    expect(ro.status).toBe(403);
    expect(ro.json.error.code).toBe("permission_denied");
    expect((await list("", "sk-svc-not-a-key")).status).toBe(401);
  });
});
