// One reconciler among replicas: the controllers run on the replica holding the PostgreSQL
// advisory lock; when that replica is killed (SIGKILL, no goodbye), another takes the lease
// over and reconciles what is written after.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { missingServices } from "../helpers/services";
import { until } from "../helpers/http";
import { clusterOf } from "../../engines/cluster";
import { startShared, startReplica, startChildReplica, type Shared, type Replica, type ChildReplica } from "./cluster";

const missing = missingServices();
if (missing) console.warn(`test/scale skipped: ${missing}`);

describe.skipIf(!!missing)("reconciler lease", () => {
  let shared: Shared;
  let child: ChildReplica | undefined;
  let b: Replica | undefined;

  beforeAll(async () => {
    shared = await startShared();
  }, 60_000);
  afterAll(async () => {
    await child?.kill9().catch(() => undefined);
    await b?.svc.stop().catch(() => undefined);
    await shared?.stop();
  });

  it("kill the replica holding the lease: another takes over and reconciles", async () => {
    child = await startChildReplica(shared.env); // first up: takes the lease
    b = await startReplica();
    const cb = clusterOf.get(b.svc.svc)!;
    expect(cb.lease).toBeDefined();
    expect(cb.lease!.held).toBe(false); // the child holds it; b only serves
    // b serves requests meanwhile (the admin key works on every replica)
    expect((await b.api("GET", "/v1/api-keys")).status).toBe(200);

    await child.kill9();
    await until(() => cb.lease!.held, 15_000);

    // b's controllers run now: an object written after the takeover becomes Ready on b
    await b.svc.svc.store.write([{ op: "upsert", kind: "AlertSettings", name: "default", owner: "config:test", spec: {} }]);
    await until(() => (b!.svc.svc.store.get("AlertSettings", "default")?.status.conditions ?? []).some((c) => c.type === "Ready"), 15_000);
  }, 120_000);
});
