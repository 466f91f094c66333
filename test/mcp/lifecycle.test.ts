// Disable, enable and delete an McpServer through plan/apply and through watch mode: disabling
// keeps the settings and drops the tools (Ready=True Disabled), enabling reconnects, deleting
// ends the service's process and removes everything.
import path from "node:path";
import { readFile, rm, writeFile } from "node:fs/promises";
import { afterAll, describe, expect, it } from "vitest";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";
import { postJson, until } from "../helpers/http";
import type { ManifestWatcher, WatchApplied } from "../../controllers/watch";
import { alive, apply, mcpDoc, node, tiny, tools, waitReason } from "./helpers";

async function pidOf(file: string): Promise<number> {
  await until(() => true);
  for (let i = 0; i < 200; i++) {
    const t = await readFile(file, "utf8").catch(() => "");
    if (t) return Number(t);
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`no pid in ${file}`);
}

describe("McpServer lifecycle through plan/apply", () => {
  let s: TestSvc;
  afterAll(async () => {
    await s?.stop();
  });

  it("disable keeps settings and drops tools; enable reconnects; delete ends the process and removes it", async () => {
    s = await startTestSvc();
    const dir = await tempDir("svc-mcp-life-");
    const pidfile = path.join(dir, "pid");
    const spec = { transport: "stdio", command: node, args: [tiny, "--pidfile", pidfile], tools: { write: { expose: true } } };

    const plan = await postJson(`${s.url}/admin/config/plan`, { documents: [mcpDoc("life", spec)], source: "life" });
    expect(plan.json.plan.changes[0]).toMatchObject({ action: "create", kind: "McpServer", name: "life" });
    expect(plan.json.plan.changes[0].highRisk).toMatch(/^adds an MCP endpoint: command /);
    expect((await apply(s, [mcpDoc("life", spec)], { source: "life" })).status).toBe(200);
    await waitReason(s, "life", "Connected");
    const pid1 = await pidOf(pidfile);
    expect(alive(pid1)).toBe(true);
    expect((await tools(s)).map((t) => t.name)).toContain("life_write");

    await apply(s, [mcpDoc("life", { ...spec, enabled: false })], { source: "life" });
    const d = await waitReason(s, "life", "Disabled");
    expect(d.status).toBe("True");
    expect((await tools(s)).map((t) => t.name)).not.toContain("life_echo");
    expect(s.svc.store.get("McpServer", "life")!.spec.tools).toEqual({ write: { expose: true, enabled: true } }); // settings kept
    await until(() => !alive(pid1), 10_000);

    await rm(pidfile);
    await apply(s, [mcpDoc("life", spec)], { source: "life" });
    await waitReason(s, "life", "Connected");
    const pid2 = await pidOf(pidfile);
    expect((await tools(s)).map((t) => t.name)).toContain("life_write");

    const del = await postJson(`${s.url}/admin/config/apply`, { documents: [], source: "life", prune: true, allowPruneAll: true, confirm: true });
    expect(del.status).toBe(200);
    await until(() => !s.svc.store.get("McpServer", "life"), 10_000);
    await until(() => !alive(pid2), 10_000);
    expect(s.svc.engines.mcp!.state("life")).toBeUndefined();
    expect(s.svc.engines.tools!.list().some((t) => t.name.startsWith("life_"))).toBe(false);
  });
});

describe("McpServer lifecycle in watch mode", () => {
  let s: TestSvc;
  afterAll(async () => {
    await s?.stop();
  });

  const yaml = (enabled: boolean) =>
    `apiVersion: svc/v1\nkind: McpServer\nmetadata:\n  name: watched\nspec:\n  transport: stdio\n  command: ${JSON.stringify(node)}\n  args: [${JSON.stringify(tiny)}]\n  enabled: ${enabled}\n`;
  const next = (w: ManifestWatcher) =>
    new Promise<WatchApplied>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error("no apply within 15 s")), 15_000);
      w.once("applied", (v: WatchApplied) => {
        clearTimeout(t);
        resolve(v);
      });
    });

  it("saving the file connects, disables, enables; removing it deletes", async () => {
    const dir = await tempDir("svc-mcp-watch-");
    const keep = `apiVersion: svc/v1\nkind: Agent\nmetadata:\n  name: keeper\nspec:\n  instructions: stay\n`;
    await writeFile(path.join(dir, "agent.yaml"), keep); // the folder is never emptied (that is refused)
    await writeFile(path.join(dir, "mcp.yaml"), yaml(true));
    s = await startTestSvc({ watch: dir });
    const w = s.watcher!;
    w.on("error", () => {});
    await waitReason(s, "watched", "Connected");
    expect(s.svc.engines.tools!.get("watched_echo")).toBeTruthy();

    let applied = next(w);
    await writeFile(path.join(dir, "mcp.yaml"), yaml(false));
    await applied;
    await waitReason(s, "watched", "Disabled");
    expect(s.svc.engines.tools!.get("watched_echo")).toBeUndefined();

    applied = next(w);
    await writeFile(path.join(dir, "mcp.yaml"), yaml(true));
    await applied;
    await waitReason(s, "watched", "Connected");
    expect(s.svc.engines.tools!.get("watched_echo")).toBeTruthy();

    applied = next(w);
    await rm(path.join(dir, "mcp.yaml"));
    await applied;
    await until(() => !s.svc.store.get("McpServer", "watched"), 10_000);
    expect(s.svc.engines.tools!.get("watched_echo")).toBeUndefined();
  });
});
