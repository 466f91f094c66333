import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  applyPlan,
  assertValid,
  ConfirmationRequiredError,
  loadText,
  makePlan,
  ManifestError,
  ownerFor,
  PruneAllRefusedError,
  readPlanFile,
  StaleRevisionError,
  type Plan,
} from "../../manifests";
import type { ResourceStore } from "../../prisma/resource-store";
import { doc, tempStore, type TempStore } from "./helpers";

let t: TempStore;
let store: ResourceStore;
beforeEach(async () => {
  t = await tempStore();
  store = t.store;
});
afterEach(async () => {
  await t.close();
});

const objs = (...docs: string[]) => assertValid(loadText(docs.join("---\n"), "test.yaml"));
const plan = (source: string, docs: string[], o: { prune?: boolean; allowPruneAll?: boolean } = {}) => makePlan(store, objs(...docs), { source, ...o });
const apply = async (source: string, docs: string[], o: { prune?: boolean; allowPruneAll?: boolean; confirm?: boolean } = {}) =>
  applyPlan(store, plan(source, docs, o), { confirm: o.confirm });
const live = () => store.list().map((x) => `${x.kind}/${x.name}@${x.owner}`).sort();
const actions = (p: Plan) => p.changes.map((c) => `${c.action} ${c.kind}/${c.name}`);

const modelA = doc("Model", "a", "file: a.gguf");
const modelB = doc("Model", "b", "file: b.gguf");

describe("plan and apply", () => {
  it("creates, then reports unchanged, then updates with a field-level diff", async () => {
    const p1 = plan("team", [modelA, modelB]);
    expect(p1.revision).toBe(store.revision);
    expect(p1.summary).toEqual({ create: 2, update: 0, delete: 0, unchanged: 0 });
    expect(p1.changes[0].owner).toBe("config:team");
    expect(p1.changes[0].fields.map((f) => f.path)).toEqual([
      "/spec/file",
      "/spec/contextSize",
      "/spec/threads",
      "/spec/parallel",
      "/spec/idleUnloadSeconds",
      "/spec/embeddings",
    ]);
    const r1 = await applyPlan(store, p1);
    expect(r1.applied).toBe(2);
    expect(r1.revision).toBe(p1.revision + 1);
    expect(live()).toEqual(["Model/a@config:team", "Model/b@config:team"]);
    expect(store.get("Model", "a")!.generation).toBe(1);

    const p2 = plan("team", [modelA, modelB]);
    expect(p2.summary).toEqual({ create: 0, update: 0, delete: 0, unchanged: 2 });
    const r2 = await applyPlan(store, p2);
    expect(r2.applied).toBe(0);
    expect(r2.revision).toBe(r1.revision); // nothing written

    const p3 = plan("team", [doc("Model", "a", "file: a.gguf\nthreads: 2\nsampling:\n  temperature: 0.5", { tier: "gold" }), modelB]);
    expect(actions(p3)).toEqual(["update Model/a", "unchanged Model/b"]);
    expect(p3.changes[0].fields).toEqual([
      { path: "/spec/threads", before: 1, after: 2 },
      { path: "/spec/sampling", after: { temperature: 0.5 } },
      { path: "/metadata/labels/tier", after: "gold" },
    ]);
    const r3 = await applyPlan(store, p3);
    expect(r3.applied).toBe(1);
    const a = store.get("Model", "a")!;
    expect(a.generation).toBe(2);
    expect(a.spec.threads).toBe(2);
    expect(a.labels).toEqual({ tier: "gold" });
  });

  it("ignores key order when comparing", async () => {
    await apply("team", [doc("Model", "a", "file: a.gguf\nthreads: 2\ncontextSize: 4096")]);
    const p = plan("team", [doc("Model", "a", "contextSize: 4096\nthreads: 2\nfile: a.gguf")]);
    expect(p.summary.unchanged).toBe(1);
  });

  it("refuses to apply a stale plan and leaves the store as it was", async () => {
    const p = plan("team", [modelA]);
    await apply("other", [modelB]); // the store moves on
    const before = store.revision;
    await expect(applyPlan(store, p)).rejects.toBeInstanceOf(StaleRevisionError);
    await expect(applyPlan(store, p)).rejects.toThrow(/plan revision 0, store revision 1/);
    expect(store.revision).toBe(before);
    expect(store.get("Model", "a")).toBeUndefined();
  });

  it("treats objects being deleted as absent", async () => {
    await apply("team", [modelA, modelB]);
    await apply("team", [modelB], { prune: true, confirm: true });
    expect(store.get("Model", "a")!.deleting).toBe(true);
    const p = plan("team", [modelA, modelB]);
    expect(actions(p)).toEqual(["create Model/a", "unchanged Model/b"]);
    await applyPlan(store, p);
    expect(store.get("Model", "a")!.deleting).toBe(false);
  });
});

describe("prune", () => {
  it("deletes only objects of the same source, of the kinds the document declares, never api-owned ones", async () => {
    await apply("team", [modelA, modelB, doc("Agent", "helper", "")]);
    await apply("other", [doc("Model", "c", "file: c.gguf")]);
    await store.write([{ op: "upsert", kind: "Model", name: "from-api", owner: "api", spec: { file: "x.gguf" } }]);

    const without = plan("team", [modelA]);
    expect(without.summary.delete).toBe(0);

    const p = plan("team", [modelA], { prune: true });
    expect(actions(p)).toEqual(["unchanged Model/a", "delete Model/b"]);
    expect(p.changes[1].highRisk).toBe("deletes Model (managed by config:team)");
    await applyPlan(store, p, { confirm: true });
    expect(live()).toEqual(["Agent/helper@config:team", "Model/a@config:team", "Model/c@config:other", "Model/from-api@api"]);
  });

  it("refuses to delete every object of the source unless allowed", async () => {
    await apply("team", [modelA, modelB]);
    expect(() => plan("team", [], { prune: true })).toThrow(PruneAllRefusedError);
    expect(() => plan("team", [], { prune: true })).toThrow(
      'refusing to prune: the document declares none of the 2 objects of source "team" (Model/a, Model/b), so prune would delete all of them',
    );
    // a document that renames everything would also leave nothing of the old objects
    expect(() => plan("team", [doc("Model", "z", "file: z.gguf")], { prune: true })).toThrow(PruneAllRefusedError);

    const p = plan("team", [], { prune: true, allowPruneAll: true });
    expect(actions(p)).toEqual(["delete Model/a", "delete Model/b"]);
    await applyPlan(store, p, { confirm: true });
    expect(live()).toEqual([]);
    // nothing left: an empty document is fine now
    expect(plan("team", [], { prune: true }).changes).toEqual([]);
  });
});

describe("ownership", () => {
  it("takes over an api-owned or foreign object with a warning, and records the new owner", async () => {
    await store.write([{ op: "upsert", kind: "Model", name: "a", owner: "api", spec: { file: "old.gguf" } }]);
    await apply("other", [modelB]);
    const p = plan("team", [modelA, modelB]);
    expect(actions(p)).toEqual(["update Model/a", "update Model/b"]);
    expect(p.changes[1].fields).toEqual([{ path: "/metadata/owner", before: "config:other", after: "config:team" }]);
    expect(p.warnings.map((w) => w.message)).toEqual([
      "Model/a was made through the API; applying this plan makes config:team its owner (a later --prune of this source may delete it)",
      "Model/b is owned by config:other; applying this plan makes config:team its owner",
    ]);
    await applyPlan(store, p);
    expect(live()).toEqual(["Model/a@config:team", "Model/b@config:team"]);
    expect(ownerFor("team")).toBe("config:team");
  });

  it("refuses a second object of a singleton kind", async () => {
    await apply("base", [doc("Server", "main", "port: 8080")]);
    expect(() => plan("team", [doc("Server", "other", "port: 9090")])).toThrow(ManifestError);
    expect(() => plan("team", [doc("Server", "other", "port: 9090")])).toThrow(
      'Server is a singleton and Server/main already exists (owner config:base); name this object "main" to update it',
    );
    expect(actions(plan("team", [doc("Server", "main", "port: 9090")]))).toEqual(["update Server/main"]);
  });
});

describe("high-risk changes", () => {
  const mcp = (extra = "") => doc("McpServer", "research", "transport: http\nurl: https://mcp.example.test/mcp" + extra);

  it("adding an MCP endpoint needs confirmation; the reasons are listed", async () => {
    const p = plan("team", [mcp(), modelA]);
    expect(p.changes[0].highRisk).toBe("adds an MCP endpoint: url https://mcp.example.test/mcp");
    expect(p.changes[1].highRisk).toBeUndefined();
    const err = await applyPlan(store, p).catch((e) => e);
    expect(err).toBeInstanceOf(ConfirmationRequiredError);
    expect(err.reasons).toEqual(["create McpServer/research: adds an MCP endpoint: url https://mcp.example.test/mcp"]);
    expect(store.list()).toEqual([]); // nothing written
    const r = await applyPlan(store, p, { confirm: true });
    expect(r.applied).toBe(2);

    // other settings of the server: no confirmation
    await apply("team", [mcp("\ntoolCallTimeoutSeconds: 5"), modelA]);
    // a new endpoint: confirmation again
    const moved = plan("team", [doc("McpServer", "research", "transport: http\nurl: https://other.test/mcp"), modelA]);
    expect(moved.changes[0].highRisk).toBe("changes the MCP endpoint from url https://mcp.example.test/mcp to url https://other.test/mcp");
    await expect(applyPlan(store, moved)).rejects.toBeInstanceOf(ConfirmationRequiredError);
  });

  it("granting screen or browser, or enabling channel writes, needs confirmation", async () => {
    await apply("team", [doc("Agent", "bot", "capabilities: [tools]")]);
    const p = plan("team", [doc("Agent", "bot", "capabilities: [tools, screen, browser, channel-write]")]);
    expect(p.changes[0].highRisk).toBe("grants the screen capability; grants the browser capability; enables channel writes (channel-write capability)");
    await expect(applyPlan(store, p)).rejects.toThrow(/confirmation required .* for 1 high-risk change:\n {2}- update Agent\/bot: grants the screen capability/);
    await applyPlan(store, p, { confirm: true });
    // keeping the capabilities while changing something else is not high-risk
    const q = plan("team", [doc("Agent", "bot", "capabilities: [tools, screen, browser, channel-write]\nmaxIterations: 3")]);
    expect(q.changes[0].highRisk).toBeUndefined();
    expect((await applyPlan(store, q)).applied).toBe(1);
    // harmless capabilities are not high-risk either
    expect(plan("team", [doc("Agent", "new", "capabilities: [tools, memory]")]).changes[0].highRisk).toBeUndefined();
  });

  it("deleting needs confirmation", async () => {
    await apply("team", [modelA, modelB]);
    const p = plan("team", [modelA], { prune: true });
    const err = await applyPlan(store, p).catch((e) => e);
    expect(err).toBeInstanceOf(ConfirmationRequiredError);
    expect(err.reasons).toEqual(["delete Model/b: deletes Model (managed by config:team)"]);
    expect(live()).toEqual(["Model/a@config:team", "Model/b@config:team"]);
  });
});

describe("secrets in plans", () => {
  it("redacts secret fields, and everything below them, in diffs", async () => {
    const prov = (cred: string, header: string) =>
      doc("Provider", "up", `type: openai\nbaseUrl: https://api.test/v1\ncredential: ${cred}\nheaders:\n  X-Org: ${header}`);
    const created = plan("team", [prov("env:OLD_KEY", "env:OLD_ORG")]);
    expect(created.changes[0].fields.filter((f) => f.path === "/spec/credential" || f.path === "/spec/headers")).toEqual([
      { path: "/spec/credential", after: "(redacted)" },
      { path: "/spec/headers", after: { "X-Org": "(redacted)" } },
    ]);
    await applyPlan(store, created);
    const p = plan("team", [prov("file:/run/secrets/new", "env:NEW_ORG")]);
    expect(p.changes[0].fields).toEqual([
      { path: "/spec/credential", before: "(redacted)", after: "(redacted)" },
      { path: "/spec/headers/X-Org", before: "(redacted)", after: "(redacted)" },
    ]);
    const shown = JSON.stringify(p.changes.map((c) => c.fields));
    for (const s of ["OLD_KEY", "/run/secrets/new", "OLD_ORG", "NEW_ORG"]) expect(shown).not.toContain(s);

    const mcp = plan("team", [doc("McpServer", "m", "transport: stdio\ncommand: node\nenvFrom:\n  TOKEN: env:MCP_TOKEN\nauth:\n  type: token\n  token: env:AUTH")]);
    const f = Object.fromEntries(mcp.changes[0].fields.map((x) => [x.path, x.after]));
    expect(f["/spec/envFrom"]).toEqual({ TOKEN: "(redacted)" });
    expect(f["/spec/auth"]).toEqual({ type: "token", token: "(redacted)" });
  });
});

describe("saved plans", () => {
  it("round-trips through JSON and applies", async () => {
    const p = plan("team", [modelA, modelB]);
    const back = readPlanFile(JSON.stringify(p, null, 2));
    expect(back.summary).toEqual(p.summary);
    expect(back.revision).toBe(p.revision);
    const r = await applyPlan(store, back);
    expect(r.applied).toBe(2);
    expect(live()).toEqual(["Model/a@config:team", "Model/b@config:team"]);
  });

  it("refuses what is not a plan, with positions", () => {
    expect(() => readPlanFile("{ nope")).toThrow(ManifestError);
    const bad = { format: "svc-plan/v0", revision: -1, source: "team", changes: [] };
    expect(() => readPlanFile(JSON.stringify(bad, null, 2))).toThrow(
      'invalid plan file:\n  <plan>:2:13: /format: format must be "svc-plan/v1" (got "svc-plan/v0")\n  <plan>:3:15: /revision: revision must be a non-negative integer',
    );
  });

  it("re-validates specs and owners of a saved plan", () => {
    const p = JSON.parse(JSON.stringify(plan("team", [doc("Provider", "up", "type: openai\ncredential: env:KEY")])));
    p.changes[0].spec.credential = "sk-clear-secret";
    p.changes[0].owner = "api";
    let msg = "";
    try {
      readPlanFile(JSON.stringify(p));
    } catch (e) {
      msg = (e as Error).message;
    }
    expect(msg).toContain('/changes/0/owner: owner must be "config:team" (the plan\'s source)');
    expect(msg).toContain("/changes/0/spec/credential: secrets must be references like env:NAME");
    expect(msg).not.toContain("sk-clear-secret");
  });

  it("a saved plan cannot skip confirmation by dropping its highRisk flags", async () => {
    const p = JSON.parse(JSON.stringify(plan("team", [doc("Agent", "bot", "capabilities: [browser]")])));
    delete p.changes[0].highRisk;
    await expect(applyPlan(store, readPlanFile(JSON.stringify(p)))).rejects.toThrow(ConfirmationRequiredError);
  });

  it("a saved plan cannot delete api-owned objects", async () => {
    await store.write([{ op: "upsert", kind: "Model", name: "keep", owner: "api", spec: { file: "k.gguf" } }]);
    const forged = {
      format: "svc-plan/v1",
      revision: store.revision,
      source: "team",
      prune: true,
      createdAt: new Date().toISOString(),
      changes: [{ action: "delete", kind: "Model", name: "keep", owner: "api", fields: [] }],
    };
    await expect(applyPlan(store, readPlanFile(JSON.stringify(forged)), { confirm: true })).rejects.toThrow(
      "refusing to delete Model/keep: it is owned by api, not config:team",
    );
    expect(live()).toEqual(["Model/keep@api"]);
  });
});
