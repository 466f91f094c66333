// Watch mode against the ways editors and operators really change a folder: an atomic save
// (temp file + rename), a folder moved in, a file deleted and recreated, and a save that lands
// while another write moves the store.
import path from "node:path";
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openDb, type OpenedDb } from "../../prisma/client";
import { ResourceStore } from "../../prisma/resource-store";
import { ManifestWatcher } from "../../controllers/watch";
import { jsonLogger } from "../../api/log";
import { tempDir } from "../helpers/svc";
import { until } from "../helpers/http";

const agent = (name: string, instructions: string) => `apiVersion: svc/v1\nkind: Agent\nmetadata:\n  name: ${name}\nspec:\n  instructions: ${instructions}\n`;

let db: OpenedDb;
let store: ResourceStore;
let dir: string;
let w: ManifestWatcher | undefined;
const logs: any[] = [];
const log = jsonLogger({ write: (l) => void logs.push(JSON.parse(l)) });

beforeEach(async () => {
  db = await openDb(path.join(await tempDir("svc-we-"), "svc.db"));
  store = await ResourceStore.open(db.prisma, db.repos.resources);
  dir = await tempDir("svc-we-dir-");
  logs.length = 0;
});
afterEach(async () => {
  await w?.stop();
  w = undefined;
  await store.close();
  await db.close();
});

async function startWatch() {
  w = new ManifestWatcher({ store, dir, log });
  w.on("error", () => {});
  await w.start();
  return w;
}
const instr = (n: string) => (store.get("Agent", n)?.spec as any)?.instructions;

describe("watch mode and editors", () => {
  it("an atomic save (temp file, then rename over the manifest) is applied", async () => {
    await writeFile(path.join(dir, "a.yaml"), agent("a", "v1"));
    await startWatch();
    expect(instr("a")).toBe("v1");
    await writeFile(path.join(dir, "a.yaml.tmp~"), agent("a", "v2"));
    await rename(path.join(dir, "a.yaml.tmp~"), path.join(dir, "a.yaml"));
    await until(() => instr("a") === "v2", 20_000);
  });

  it("a folder moved into the watched folder is applied", async () => {
    await writeFile(path.join(dir, "a.yaml"), agent("a", "v1"));
    await startWatch();
    const outside = await tempDir("svc-we-out-");
    await mkdir(path.join(outside, "sub"));
    await writeFile(path.join(outside, "sub", "b.yaml"), agent("b", "v1"));
    await rename(path.join(outside, "sub"), path.join(dir, "sub"));
    await until(() => instr("b") === "v1", 20_000);
  });

  it("a folder created and then filled is applied", async () => {
    await writeFile(path.join(dir, "a.yaml"), agent("a", "v1"));
    await startWatch();
    await mkdir(path.join(dir, "sub2"));
    await writeFile(path.join(dir, "sub2", "c.yaml"), agent("c", "v1"));
    await until(() => instr("c") === "v1", 20_000);
  });

  it("a file deleted and recreated ends with the recreated content", async () => {
    await writeFile(path.join(dir, "a.yaml"), agent("a", "v1"));
    await writeFile(path.join(dir, "b.yaml"), agent("b", "v1"));
    await startWatch();
    await rm(path.join(dir, "b.yaml"));
    await writeFile(path.join(dir, "b.yaml"), agent("b", "v3"));
    await until(() => instr("b") === "v3", 20_000);
  });

  it("a save that lands while another write moves the store is still applied (re-planned, not dropped)", async () => {
    await writeFile(path.join(dir, "a.yaml"), agent("a", "v1"));
    await startWatch();
    expect(instr("a")).toBe("v1");
    // another writer (the admin API, an API-made key, another replica) commits between the
    // watcher's plan and its write: the watcher's write then finds the store moved
    const write = store.write.bind(store);
    let raced = false;
    store.write = (async (ops: any, opts: any) => {
      if (!raced && opts?.expectedRevision !== undefined) {
        raced = true;
        await write([{ op: "upsert", kind: "Agent", name: "other", owner: "api", spec: { instructions: "x" } }]);
      }
      return write(ops, opts);
    }) as typeof store.write;
    await writeFile(path.join(dir, "a.yaml"), agent("a", "v2"));
    await until(() => raced && instr("a") === "v2", 20_000);
  });

  it("the folder removed and made again (rm -rf, then a fresh copy): later saves are still applied", async () => {
    await writeFile(path.join(dir, "a.yaml"), agent("a", "v0"));
    await startWatch();
    await rm(dir, { recursive: true });
    // the removal is noticed (the save that removed the files fails to load the folder) ...
    await until(() => logs.some((l) => String(l.msg).includes("nothing applied") && String(l.msg).includes("ENOENT")), 20_000);
    expect(instr("a")).toBe("v0"); // ... and changes nothing
    await mkdir(dir);
    await writeFile(path.join(dir, "a.yaml"), agent("a", "v1"));
    await until(() => instr("a") === "v1", 20_000);
    await writeFile(path.join(dir, "a.yaml"), agent("a", "v2"));
    await until(() => instr("a") === "v2", 20_000);
  });

  it("the folder replaced at once by another one: later saves are still applied", async () => {
    await writeFile(path.join(dir, "a.yaml"), agent("a", "v0"));
    await startWatch();
    const fresh = await tempDir("svc-we-fresh-");
    await writeFile(path.join(fresh, "a.yaml"), agent("a", "v1"));
    await rm(dir, { recursive: true });
    await rename(fresh, dir);
    await until(() => instr("a") === "v1", 20_000);
    await writeFile(path.join(dir, "a.yaml"), agent("a", "v2"));
    await until(() => instr("a") === "v2", 20_000);
  });
});
