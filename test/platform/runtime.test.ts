// The reconcile runtime on a real store: backoff, de-duplication, status on every exit,
// finalize-then-purge, waitForReady.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import path from "node:path";
import { openDb, type OpenedDb } from "../../prisma/client";
import { ResourceStore } from "../../prisma/resource-store";
import { ControllerManager } from "../../controllers/runtime";
import { acceptedController } from "../../controllers/kinds/accepted";
import type { Controller } from "../../controllers/types";
import { jsonLogger } from "../../boot/start";
import { tempDir } from "../helpers/svc";
import { until } from "../helpers/http";

let db: OpenedDb;
let store: ResourceStore;
let manager: ControllerManager | null = null;
const quiet = jsonLogger({ write: () => {} });

beforeEach(async () => {
  db = await openDb(path.join(await tempDir("svc-rt-"), "svc.db"));
  store = await ResourceStore.open(db.prisma, db.repos.resources);
});

afterEach(async () => {
  await manager?.stop();
  manager = null;
  await store.close();
  await db.close();
});

const agent = (name: string, instructions = "x") => ({ op: "upsert" as const, kind: "Agent", name, owner: "config:test", spec: { instructions } });

function start(controllers: Controller[], opts: Partial<ConstructorParameters<typeof ControllerManager>[0]> = {}) {
  manager = new ControllerManager({ store, controllers, fallback: acceptedController(), log: quiet, resyncMs: 0, ...opts });
  manager.start();
  return manager;
}

describe("ControllerManager", () => {
  it("retries a throwing controller with growing delays, writes status on every exit, and resets on success", async () => {
    const attempts: number[] = [];
    const ctl: Controller = {
      kind: "Agent",
      async reconcile() {
        attempts.push(Date.now());
        if (attempts.length <= 4) throw new Error(`boom ${attempts.length}`);
        return { status: "True", reason: "Fine", message: "ok" };
      },
    };
    await store.write([agent("a")]);
    const m = start([ctl], { backoffBaseMs: 40, backoffMaxMs: 10_000 });
    const delays: number[] = [];
    m.on("failed", (_ref: unknown, _e: unknown, delay: number) => delays.push(delay)); // before the first reconcile settles
    await until(() => attempts.length >= 2, 5000);
    // the failure is visible in status, at the observed generation
    const failed = store.get("Agent", "a")!.status;
    expect(failed.observedGeneration).toBe(1);
    expect(failed.conditions![0]).toMatchObject({ type: "Ready", status: "False", reason: "ReconcileError" });
    expect(failed.conditions![0].message).toMatch(/boom/);
    await until(() => store.get("Agent", "a")!.status.conditions?.[0].status === "True", 10_000);
    expect(attempts.length).toBe(5);
    // the retries were scheduled 40, 80, 160, 320 ms out (what the manager decided; how late this
    // machine's timers fire is not the manager's doing)
    expect(delays).toEqual([40, 80, 160, 320]);
    expect(m.failureCount({ kind: "Agent", name: "a" })).toBe(0);
    // lastTransitionTime moved when False -> True
    const ok = store.get("Agent", "a")!.status.conditions![0];
    expect(ok.status).toBe("True");
    // (600 ms of backoff lie between the two: a later instant, not the same one)
    expect(Date.parse(ok.lastTransitionTime)).toBeGreaterThan(Date.parse(failed.conditions![0].lastTransitionTime));
  });

  it("de-duplicates queued keys and re-runs a key enqueued while it was being reconciled", async () => {
    const runs: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const ctl: Controller = {
      kind: "Agent",
      async reconcile(obj) {
        runs.push(obj.name);
        if (obj.name === "a" && runs.filter((n) => n === "a").length === 1) await gate;
        return { status: "True", reason: "Fine", message: "ok" };
      },
    };
    await store.write([agent("a"), agent("b")]);
    const m = start([ctl], { concurrency: 1 });
    await until(() => runs.length === 1); // "a" is running, "b" queued
    for (let i = 0; i < 5; i++) {
      m.enqueue({ kind: "Agent", name: "a" });
      m.enqueue({ kind: "Agent", name: "b" });
    }
    release();
    await until(() => runs.length >= 3);
    await m.idle();
    await new Promise((r) => setTimeout(r, 50));
    expect(runs.sort()).toEqual(["a", "a", "b"]);
  });

  it("keeps lastTransitionTime while the status does not flip, and tracks observedGeneration", async () => {
    start([]); // Agent falls to the accepted controller
    await store.write([agent("a", "one")]);
    await until(() => store.get("Agent", "a")!.status.observedGeneration === 1);
    const first = store.get("Agent", "a")!.status.conditions![0];
    expect(first).toMatchObject({ status: "False", reason: "NotImplemented" });
    expect(first.message).toBe("accepted and stored; Agent engine not available in this build");
    await new Promise((r) => setTimeout(r, 15));
    await store.write([agent("a", "two")]);
    await until(() => store.get("Agent", "a")!.status.observedGeneration === 2);
    expect(store.get("Agent", "a")!.generation).toBe(2);
    expect(store.get("Agent", "a")!.status.conditions![0].lastTransitionTime).toBe(first.lastTransitionTime);
  });

  it("finalizes a deleted object before purging it", async () => {
    const events: string[] = [];
    const ctl: Controller = {
      kind: "Agent",
      async reconcile() {
        return { status: "True", reason: "Fine", message: "ok" };
      },
      async finalize(obj) {
        events.push(`finalize ${obj.name} (in store: ${!!store.get(obj.kind, obj.name)})`);
      },
    };
    const m = start([ctl]);
    await store.write([agent("a")]);
    await until(() => store.get("Agent", "a")?.status.observedGeneration === 1);
    m.on("purged", (r) => events.push(`purged ${r.name}`));
    await store.write([{ op: "delete", kind: "Agent", name: "a" }]);
    await until(() => events.length === 2);
    expect(events).toEqual(["finalize a (in store: true)", "purged a"]);
    expect(store.get("Agent", "a")).toBeUndefined();
    const rows = await db.prisma.resource.findMany({ where: { kind: "Agent", name: "a" } });
    expect(rows).toHaveLength(0);
  });

  it("a failing finalize is retried and the object stays until it succeeds", async () => {
    let tries = 0;
    const ctl: Controller = {
      kind: "Agent",
      async reconcile() {
        return { status: "True", reason: "Fine", message: "ok" };
      },
      async finalize() {
        if (++tries < 3) throw new Error("still busy");
      },
    };
    start([ctl], { backoffBaseMs: 20 });
    await store.write([agent("a")]);
    await store.write([{ op: "delete", kind: "Agent", name: "a" }]);
    await until(() => tries >= 2);
    expect(store.get("Agent", "a")?.status.conditions?.[0]).toMatchObject({ reason: "FinalizeFailed" });
    await until(() => store.get("Agent", "a") === undefined);
    expect(tries).toBe(3);
  });

  it("waitForReady resolves at the new generation and reports NotImplemented kinds as settled", async () => {
    const ctl: Controller = {
      kind: "Model",
      async reconcile() {
        await new Promise((r) => setTimeout(r, 30));
        return { status: "True", reason: "Registered", message: "ok" };
      },
    };
    const m = start([ctl]);
    const { revision } = await store.write([
      { op: "upsert", kind: "Model", name: "m", owner: "config:test", spec: { file: "x.gguf" } },
      agent("a"),
    ]);
    expect(revision).toBe(1);
    const r = await m.waitForReady([{ kind: "Model", name: "m" }, { kind: "Agent", name: "a" }], { "Model/m": 1, "Agent/a": 1 }, 5000);
    expect(r.ready).toBe(true);
    expect(r.objects.map((o) => o.state).sort()).toEqual(["not-implemented", "ready"]);
    // a generation never reached times out
    const t = await m.waitForReady([{ kind: "Model", name: "m" }], { "Model/m": 9 }, 200);
    expect(t).toMatchObject({ ready: false, timedOut: true });
  });

  it("resync re-reads the store file written by another process", async () => {
    const seen: string[] = [];
    const ctl: Controller = {
      kind: "Agent",
      async reconcile(obj) {
        seen.push(obj.name);
        return { status: "True", reason: "Fine", message: "ok" };
      },
    };
    const m = start([ctl]);
    // a second store on the same file stands in for `svc config apply` run offline
    const other = await ResourceStore.open(db.prisma, db.repos.resources);
    await other.write([agent("from-cli")]);
    expect(store.get("Agent", "from-cli")).toBeUndefined();
    await m.resync();
    await until(() => seen.includes("from-cli"));
    expect(store.revision).toBe(1);
  });
});
