// GET /v1/usage: grouped in SQL from the audit log; rights follow organization/team/view_all_usage.
import { describe, it, expect, afterAll, beforeAll } from "vitest";
import { runCli } from "../helpers/cli";
import { startEnv, standIn, provider, expectError, type Env, type StandIn } from "./fixtures";

let env: Env;
let up: StandIn;
let a1: { id: string; secret: string };
let a2: { id: string; secret: string };
let b1: { id: string; secret: string };
let orgViewer: { id: string; secret: string };
let limited: { id: string; secret: string };

beforeAll(async () => {
  up = await standIn({ promptTokens: 10, completionTokens: 5 });
  env = await startEnv();
  // $1 per million input tokens, $2 per million output: 10 + 5 tokens cost 20 micro-dollars
  await env.apply([provider("up", up, [{ name: "gpt-x", inputPerMillion: 1, outputPerMillion: 2 }, { name: "gpt-y" }])]);
  a1 = await env.key({ name: "a-one", organization_id: "org-a", team_id: "red" });
  a2 = await env.key({ name: "a-two", organization_id: "org-a", team_id: "blue" });
  b1 = await env.key({ name: "b-one", organization_id: "org-b", team_id: "red" });
  orgViewer = await env.key({ name: "a-viewer", key_type: "organization", organization_id: "org-a", permissions: { view_all_usage: true } });
  limited = await env.key({ name: "limited", organization_id: "org-b", rate_limits: { per_minute: 1 } });
  const call = (k: { secret: string }, model: string, metadata?: Record<string, string>) =>
    env.client(k.secret, { maxRetries: 0 }).chat.completions.create({ model, messages: [{ role: "user", content: "hi" }], ...(metadata ? { metadata } : {}) });
  await call(a1, "gpt-x", { workflow_id: "wf-1", user_id: "alice" });
  await call(a1, "gpt-x", { workflow_id: "wf-1", user_id: "bob" });
  await call(a1, "gpt-y", { workflow_id: "wf-2", user_id: "alice" });
  await call(a2, "gpt-x");
  await call(b1, "gpt-x");
  await call(limited, "gpt-x");
  await expectError(call(limited, "gpt-x"), 429, "rate_limit_exceeded");
});
afterAll(async () => {
  await env?.stop();
  await up?.close();
});

const usage = (qs: string, key = env.adminKey) => env.api("GET", `/v1/usage${qs}`, undefined, key);

describe("GET /v1/usage", () => {
  it("groups by key with names, tokens, spend, latency and refusals by kind", async () => {
    const r = await usage("?group_by=key");
    expect(r.status).toBe(200);
    const byKey = new Map(r.json.data.map((x: any) => [x.key_id, x]));
    const one: any = byKey.get(a1.id);
    expect(one).toMatchObject({ key_id: a1.id, key_name: "a-one", requests: 3, prompt_tokens: 30, completion_tokens: 15, total_tokens: 45, errors: 0, refusals: {} });
    // two priced calls (gpt-x) at 20 micro-dollars each; gpt-y has no price
    expect(one.spend).toBeCloseTo(0.00004, 10);
    expect(typeof one.latency_p50_ms).toBe("number");
    expect(one.latency_p95_ms).toBeGreaterThanOrEqual(one.latency_p50_ms);
    expect(byKey.get(limited.id)).toMatchObject({ requests: 2, refusals: { rate_limit_exceeded: 1 }, errors: 0 });
    // management calls (key creation above) are not usage
    expect(r.json.data.every((x: any) => x.key_id !== null)).toBe(true);
  });

  it("groups by team, organization, model, day and the attribution metadata", async () => {
    const teams = await usage("?group_by=team");
    expect(teams.json.data.find((x: any) => x.team_id === "red").requests).toBe(4); // a1 (3) + b1 (1)
    expect(teams.json.data.find((x: any) => x.team_id === "blue").requests).toBe(1);

    const orgModel = await usage("?group_by=organization,model");
    expect(orgModel.json.data.find((x: any) => x.organization_id === "org-a" && x.model === "gpt-x").requests).toBe(3);

    const day = new Date().toISOString().slice(0, 10);
    const days = await usage("?group_by=day&group_by=key");
    expect(days.json.data.find((x: any) => x.key_id === a1.id)).toMatchObject({ day, requests: 3 });

    const wf = await usage("?group_by=metadata.workflow_id,metadata.user_id&key_id=" + a1.id);
    expect(wf.json.data.map((x: any) => [x.workflow_id, x.user_id, x.requests])).toEqual([
      ["wf-1", "alice", 1],
      ["wf-1", "bob", 1],
      ["wf-2", "alice", 1],
    ]);
    const filtered = await usage("?metadata.workflow_id=wf-1");
    expect(filtered.json.data).toEqual([expect.objectContaining({ requests: 2, prompt_tokens: 20 })]);
  });

  it("filters by time, model and team, and answers CSV", async () => {
    const future = new Date(Date.now() + 3_600_000).toISOString();
    expect((await usage(`?from=${encodeURIComponent(future)}`)).json.data).toEqual([]);
    const gy = await usage("?model=gpt-y");
    expect(gy.json.data).toEqual([expect.objectContaining({ requests: 1 })]);
    const blue = await usage("?team_id=blue&group_by=key");
    expect(blue.json.data.map((x: any) => x.key_id)).toEqual([a2.id]);
    const res = await fetch(`${env.url}/v1/usage?group_by=key&format=csv`, { headers: { authorization: `Bearer ${env.adminKey}` } });
    expect(res.headers.get("content-type")).toMatch(/text\/csv/);
    const lines = (await res.text()).trim().split("\r\n");
    expect(lines[0]).toBe("key_id,key_name,requests,prompt_tokens,completion_tokens,total_tokens,spend,errors,refusals,latency_p50_ms,latency_p95_ms");
    expect(lines.find((l) => l.startsWith(limited.id))).toContain("rate_limit_exceeded=1");
  });

  it("shows each key only what its rights allow", async () => {
    const own = await usage("?group_by=key", a2.secret);
    expect(own.status).toBe(200);
    expect(own.json.data.map((x: any) => x.key_id)).toEqual([a2.id]);
    // a filter never widens the scope
    expect((await usage(`?key_id=${a1.id}`, a2.secret)).json.data).toEqual([]);
    const org = await usage("?group_by=key", orgViewer.secret);
    expect(org.json.data.map((x: any) => x.key_id).sort()).toEqual([a1.id, a2.id].sort());
    expect((await usage("?organization_id=org-b", orgViewer.secret)).json.data).toEqual([]);
    // a team key with view_all_usage sees its team's keys in its organization (b1 is "red" in org-b)
    const teamViewer = await env.key({ name: "red-viewer", key_type: "team", organization_id: "org-a", team_id: "red", permissions: { view_all_usage: true } });
    expect((await usage("?group_by=key", teamViewer.secret)).json.data.map((x: any) => x.key_id)).toEqual([a1.id]);
  });

  it("refuses bad parameters with 400 naming them, and a bad key with 401", async () => {
    const bad = await usage("?group_by=colour");
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatchObject({ code: "invalid_request", param: "group_by" });
    expect(bad.json.error.message).toContain("metadata.workflow_id");
    const date = await usage("?from=yesterday");
    expect(date.json.error).toMatchObject({ code: "invalid_request", param: "from" });
    const anon = await usage("?group_by=key", "sk-svc-not-a-key");
    expect(anon.status).toBe(401);
  });
});

describe("GET /v1/audit-logs filters used by the console", () => {
  it("filters by model and the attribution metadata", async () => {
    const r = await env.api("GET", "/v1/audit-logs?model=gpt-x&metadata.workflow_id=wf-1&metadata.user_id=bob");
    expect(r.status).toBe(200);
    expect(r.json.data.map((e: any) => [e.api_key_id, e.model, e.metadata.user_id])).toEqual([[a1.id, "gpt-x", "bob"]]);
    expect((await env.api("GET", "/v1/audit-logs?model=gpt-y")).json.data.every((e: any) => e.model === "gpt-y")).toBe(true);
  });
});

describe("svc usage", () => {
  const where = () => ["--home", env.home, "--port", String(env.svc.port)];
  const vars = { SVC_ADMIN_KEY: undefined, SVC_API_KEY: undefined, SVC_PORT: undefined };

  it("prints the report as a table, grouped as asked", async () => {
    const r = await runCli(["usage", "--group-by", "key,model", ...where()], vars);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^KEY_ID\s+KEY_NAME\s+MODEL\s+REQUESTS/);
    const a1x = lines.find((l) => l.startsWith(a1.id) && l.includes("gpt-x"))!;
    expect(a1x.split(/\s+/).slice(1, 4)).toEqual(["a-one", "gpt-x", "2"]);
  });

  it("prints CSV with --csv, and what SVC_API_KEY may see", async () => {
    const r = await runCli(["usage", "--csv", ...where()], { ...vars, SVC_API_KEY: a2.secret });
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trim().split("\r\n");
    expect(lines).toHaveLength(2);
    expect(lines[1].startsWith(`${a2.id},a-two,1,`)).toBe(true);
    const bad = await runCli(["usage", "--group-by", "colour", ...where()], vars);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("group_by");
  });
});
