// Plan/apply over HTTP against a real server (ephemeral port, SQLite in a temp dir).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSvc, type TestSvc } from "../helpers/svc";
import { getText, postJson } from "../helpers/http";

let s: TestSvc;
beforeAll(async () => {
  s = await startTestSvc();
});
afterAll(async () => {
  await s?.stop();
});

const agent = (name: string, instructions: string, extra = "") =>
  `apiVersion: svc/v1\nkind: Agent\nmetadata:\n  name: ${name}\nspec:\n  instructions: ${instructions}\n${extra}`;
const plan = (body: object) => postJson(`${s.url}/admin/config/plan`, body);
const apply = (body: object) => postJson(`${s.url}/admin/config/apply`, body);

describe("health and errors", () => {
  it("GET /health answers ok with the store revision", async () => {
    const r = await getText(`${s.url}/health`);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text)).toMatchObject({ status: "ok", revision: expect.any(Number) });
  });

  it("unknown route -> 404 JSON, malformed JSON -> 400 JSON, oversized body -> 413 JSON; never a stack trace", async () => {
    const nf = await getText(`${s.url}/no/such/route`);
    expect(nf.status).toBe(404);
    expect(JSON.parse(nf.text).error).toMatchObject({ code: "not_found", type: expect.any(String) });

    const bad = await fetch(`${s.url}/admin/config/plan`, { method: "POST", headers: { "content-type": "application/json" }, body: "{not json" });
    expect(bad.status).toBe(400);
    const badJson: any = await bad.json();
    expect(badJson.error).toMatchObject({ code: "invalid_request" });
    expect(badJson.error.message).toMatch(/not valid JSON/);

    const big = "x".repeat(4 * 1024 * 1024 + 10);
    const tooBig = await fetch(`${s.url}/admin/config/plan`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ document: big }) });
    expect(tooBig.status).toBe(413);
    const tb: any = await tooBig.json();
    expect(tb.error.message).toMatch(/exceeds/);
    for (const t of [JSON.stringify(badJson), JSON.stringify(tb)]) expect(t).not.toMatch(/at .*\.ts:\d+/);
  });

  it("export and schema take format=yaml|json and refuse anything else with 400", async () => {
    const y = await getText(`${s.url}/admin/config/schema?format=yaml`);
    expect(y.status).toBe(200);
    expect(y.headers.get("content-type")).toMatch(/yaml/);
    const j = await getText(`${s.url}/admin/config/schema?format=json`);
    expect(JSON.parse(j.text).definitions.Model).toBeTruthy();
    const e = await getText(`${s.url}/admin/config/export?format=json`);
    expect(Array.isArray(JSON.parse(e.text))).toBe(true);
    const bad = await getText(`${s.url}/admin/config/export?format=toml`);
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.text).error).toMatchObject({ code: "invalid_request", param: "format" });
  });
});

describe("plan and apply", () => {
  it("create, unchanged, update, prune with exit codes", async () => {
    const src = "lifecycle";
    const docs = agent("la", "one") + "---\n" + agent("lb", "two");
    let p = await plan({ document: docs, source: src });
    expect(p.status).toBe(200);
    expect(p.json.exitCode).toBe(2);
    expect(p.json.plan.summary).toEqual({ create: 2, update: 0, delete: 0, unchanged: 0 });

    const a = await apply({ document: docs, source: src });
    expect(a.status).toBe(200);
    expect(a.json.applied).toBe(2);
    const rev = a.json.revision;
    expect(s.svc.store.get("Agent", "la")).toMatchObject({ owner: "config:lifecycle", generation: 1 });

    p = await plan({ document: docs, source: src });
    expect(p.json.exitCode).toBe(0);
    expect(p.json.plan.summary.unchanged).toBe(2);
    const again = await apply({ document: docs, source: src });
    expect(again.json).toMatchObject({ applied: 0, revision: rev });

    const changed = agent("la", "one-and-a-half") + "---\n" + agent("lb", "two");
    p = await plan({ document: changed, source: src });
    expect(p.json.exitCode).toBe(2);
    const upd = p.json.plan.changes.find((c: any) => c.name === "la");
    expect(upd).toMatchObject({ action: "update" });
    expect(upd.fields).toContainEqual({ path: "/spec/instructions", before: "one", after: "one-and-a-half" });
    const u = await apply({ document: changed, source: src, wait: true, waitTimeoutSeconds: 1 });
    expect(u.json.revision).toBe(rev + 1);
    expect(s.svc.store.get("Agent", "la")!.generation).toBe(2);
    expect(u.json.wait.objects[0]).toMatchObject({ kind: "Agent", name: "la", generation: 2, state: "pending", reason: "ModelNotSet" });

    // prune: lb is no longer declared; deleting is high-risk, so confirm
    const only = agent("la", "one-and-a-half");
    p = await plan({ document: only, source: src, prune: true });
    expect(p.json.plan.changes.find((c: any) => c.name === "lb")).toMatchObject({ action: "delete", highRisk: expect.any(String) });
    const refused = await apply({ document: only, source: src, prune: true });
    expect(refused.status).toBe(409);
    expect(refused.json.error).toMatchObject({ code: "confirmation_required", reasons: [expect.stringMatching(/delete Agent\/lb/)] });
    expect(s.svc.store.get("Agent", "lb")).toBeTruthy();
    const pruned = await apply({ document: only, source: src, prune: true, confirm: true, wait: true, waitTimeoutSeconds: 10 });
    expect(pruned.status).toBe(200);
    expect(pruned.json.wait.objects).toContainEqual(expect.objectContaining({ name: "lb", state: "deleted" }));
    expect(s.svc.store.get("Agent", "lb")).toBeUndefined();

    // prune never touches another source
    await apply({ document: agent("other-src", "x"), source: "elsewhere" });
    await apply({ document: only, source: src, prune: true, confirm: true });
    expect(s.svc.store.get("Agent", "other-src")).toBeTruthy();

    // pruning everything of a source is refused unless allowPruneAll
    const empty = await apply({ documents: [], source: "elsewhere", prune: true, confirm: true });
    expect(empty.status).toBe(409);
    expect(empty.json.error.code).toBe("prune_all_refused");
  });

  it("high-risk create (screen capability) is refused without confirm, applied with it", async () => {
    const doc = agent("risky", "look", "  capabilities: [screen]\n");
    const r = await apply({ document: doc });
    expect(r.status).toBe(409);
    expect(r.json.error.code).toBe("confirmation_required");
    expect(r.json.error.reasons.join()).toMatch(/screen/);
    expect(s.svc.store.get("Agent", "risky")).toBeUndefined();
    const ok = await apply({ document: doc, confirm: true });
    expect(ok.status).toBe(200);
    expect(s.svc.store.get("Agent", "risky")).toBeTruthy();
  });

  it("a saved plan applies once; a stale saved plan is refused with 409 stale_plan", async () => {
    const p1 = await plan({ document: agent("saved", "v1"), source: "saved" });
    const p2 = await plan({ document: agent("saved", "v1b"), source: "saved" });
    const a1 = await apply({ plan: p1.json.plan });
    expect(a1.status).toBe(200);
    expect(a1.json.applied).toBe(1);
    const a2 = await apply({ plan: p2.json.plan });
    expect(a2.status).toBe(409);
    expect(a2.json.error).toMatchObject({ code: "stale_plan", planRevision: p2.json.plan.revision });
    expect(s.svc.store.get("Agent", "saved")!.spec.instructions).toBe("v1");
  });

  it("accepts documents as objects and raw application/yaml bodies", async () => {
    const r = await apply({
      documents: [{ apiVersion: "svc/v1", kind: "McpServer", metadata: { name: "tools" }, spec: { transport: "stdio", command: "node" } }],
      confirm: true,
    });
    expect(r.status).toBe(200);
    expect(s.svc.store.get("McpServer", "tools")).toBeTruthy();
    const y = await fetch(`${s.url}/admin/config/plan?source=yaml-src`, { method: "POST", headers: { "content-type": "application/yaml" }, body: agent("from-yaml", "hi") });
    const yj: any = await y.json();
    expect(y.status).toBe(200);
    expect(yj.plan).toMatchObject({ source: "yaml-src", summary: { create: 1 } });
  });

  it("an exported state re-applies as no change", async () => {
    const e = await getText(`${s.url}/admin/config/export?format=yaml`);
    const p = await plan({ document: e.text, source: "roundtrip" });
    expect(p.status).toBe(200);
    expect(p.json.plan.summary.create).toBe(0);
    expect(p.json.plan.changes.every((c: any) => c.fields.every((f: any) => f.path === "/metadata/owner"))).toBe(true);
  });
});

describe("invalid documents -> 422 with file:line:col and the JSON path; nothing changes", () => {
  const cases: Array<[string, string, RegExp, string]> = [
    ["wrong type", "apiVersion: svc/v1\nkind: Model\nmetadata:\n  name: m\nspec:\n  file: a.gguf\n  threads: many\n", /<request>:7:\d+: \/spec\/threads/, "/spec/threads"],
    ["unknown kind", "apiVersion: svc/v1\nkind: Gadget\nmetadata:\n  name: g\nspec: {}\n", /<request>:2:\d+: \/kind: .*Gadget/, "/kind"],
    ["bad YAML", "apiVersion: svc/v1\nkind: Agent\nmetadata:\n  name: [unclosed\nspec: {}\n", /<request>:\d+:\d+/, ""],
    ["duplicate names", agent("dup", "a") + "---\n" + agent("dup", "b"), /<request>:\d+:\d+: \/metadata\/name: .*dup/i, "/metadata/name"],
  ];
  for (const [what, doc, message, param] of cases) {
    it(what, async () => {
      const before = s.svc.store.revision;
      const r = await apply({ document: doc, confirm: true });
      expect(r.status).toBe(422);
      expect(r.json.error.code).toBe("invalid_manifest");
      expect(r.json.error.message).toMatch(message);
      expect(r.json.error.param ?? "").toBe(param); // "" where the error names no field
      expect(r.json.error.issues.length).toBeGreaterThan(0);
      expect(r.json.error.issues[0].pos).toMatchObject({ file: "<request>", line: expect.any(Number), column: expect.any(Number) });
      expect(s.svc.store.revision).toBe(before);
    });
  }

  it("one bad document among good ones changes nothing (all-or-nothing)", async () => {
    const before = s.svc.store.revision;
    const r = await apply({ document: agent("good-one", "fine") + "---\napiVersion: svc/v1\nkind: Agent\nmetadata:\n  name: bad-one\nspec:\n  maxIterations: 0\n" });
    expect(r.status).toBe(422);
    expect(r.json.error.message).toMatch(/<request>:\d+:\d+: \/spec\/maxIterations/);
    expect(s.svc.store.get("Agent", "good-one")).toBeUndefined();
    expect(s.svc.store.revision).toBe(before);
  });

  it("a body with neither document nor documents nor plan is a 400", async () => {
    const r = await plan({ source: "x" });
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe("invalid_request");
  });
});
