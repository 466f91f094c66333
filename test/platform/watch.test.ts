// Watch mode: save -> applied; an invalid save changes nothing and reports file:line:col while
// the server keeps serving; fixing it applies; removing a file prunes within the folder's source.
import path from "node:path";
import { rm, writeFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";
import type { ManifestWatcher, WatchApplied, WatchFailed } from "../../controllers/watch";

function next<T>(w: ManifestWatcher, event: "applied" | "error", timeoutMs = 10_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no "${event}" within ${timeoutMs} ms`)), timeoutMs);
    w.once(event, (v: T) => {
      clearTimeout(t);
      resolve(v);
    });
  });
}

const agent = (name: string, instructions: string) => `apiVersion: svc/v1\nkind: Agent\nmetadata:\n  name: ${name}\nspec:\n  instructions: ${instructions}\n`;
const model = (name: string, threads: string) => `apiVersion: svc/v1\nkind: Model\nmetadata:\n  name: ${name}\nspec:\n  file: ${name}.gguf\n  threads: ${threads}\n`;

describe("svc serve --watch", () => {
  let s: TestSvc;
  let dir: string;
  let w: ManifestWatcher;
  beforeAll(async () => {
    dir = await tempDir("svc-watch-");
    await writeFile(path.join(dir, "agent.yaml"), agent("watched", "v1"));
    s = await startTestSvc({ watch: dir });
    w = s.watcher!;
    w.on("error", () => {}); // tests await errors explicitly
  });
  afterAll(async () => {
    await s?.stop();
  });

  it("applies the folder at start with source watch:<dir>", () => {
    expect(s.svc.store.get("Agent", "watched")).toMatchObject({ owner: `config:watch:${dir}` });
  });

  it("applies a saved file", async () => {
    const applied = next<WatchApplied>(w, "applied");
    await writeFile(path.join(dir, "model.yaml"), model("wm", "1"));
    const ev = await applied;
    expect(ev.applied).toBe(1);
    expect(s.svc.store.get("Model", "wm")).toBeTruthy();
    expect(s.logs.some((l) => l.msg === `applied 1 changes (revision ${ev.revision})`)).toBe(true);
  });

  it("an invalid save changes nothing, reports file:line:col, and the server keeps serving; fixing it applies", async () => {
    const rev = s.svc.store.revision;
    const failed = next<WatchFailed>(w, "error");
    await writeFile(path.join(dir, "model.yaml"), model("wm", "lots"));
    const ev = await failed;
    expect(ev.message).toContain(`${path.join(dir, "model.yaml")}:7:12: /spec/threads`);
    expect(s.svc.store.revision).toBe(rev);
    expect(s.svc.store.get("Model", "wm")!.spec.threads).toBe(1);
    expect(s.logs.some((l) => l.level === "error" && String(l.msg).includes("model.yaml:7:12"))).toBe(true);
    expect((await fetch(`${s.url}/health`)).status).toBe(200);

    const fixed = next<WatchApplied>(w, "applied");
    await writeFile(path.join(dir, "model.yaml"), model("wm", "2"));
    expect((await fixed).applied).toBe(1);
    expect(s.svc.store.get("Model", "wm")!.spec.threads).toBe(2);
  });

  it("removing a file deletes its objects (prune within the folder's source, any kind)", async () => {
    const applied = next<WatchApplied>(w, "applied");
    await rm(path.join(dir, "model.yaml"));
    const ev = await applied;
    expect(ev.plan.changes).toContainEqual(expect.objectContaining({ action: "delete", kind: "Model", name: "wm" }));
    expect(s.svc.store.list({ kind: "Model" })).toHaveLength(0); // deleting (being finalized) or already purged
    expect(s.svc.store.get("Agent", "watched")).toBeTruthy(); // agent.yaml is still there
  });

  it("emptying the folder is refused and the objects are kept", async () => {
    const failed = next<WatchFailed>(w, "error");
    await rm(path.join(dir, "agent.yaml"));
    const ev = await failed;
    expect(ev.message).toMatch(/refusing to prune/);
    // the way out it names is a command that has the flag (svc serve has no --allow-prune-all)
    expect(ev.message).toContain("svc config apply --prune --allow-prune-all --source");
    expect(s.svc.store.get("Agent", "watched")).toBeTruthy();
  });
});
