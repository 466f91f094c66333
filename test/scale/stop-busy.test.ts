// Stopping a replica whose PostgreSQL connection is stuck in a query (engines/store/pg-pool.ts):
// the stop still ends, within seconds, and says which query it ended.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { missingServices } from "../helpers/services";
import { startShared, startReplica, type Shared, type Replica } from "./cluster";

const missing = missingServices();
if (missing) console.warn(`test/scale skipped: ${missing}`);

describe.skipIf(!!missing)("stop with a busy PostgreSQL connection", () => {
  let shared: Shared;
  let r: Replica | undefined;

  beforeAll(async () => {
    shared = await startShared();
    r = await startReplica();
  }, 60_000);

  afterAll(async () => {
    await r?.svc.stop().catch(() => undefined);
    await shared?.stop();
  });

  it("ends the query that never returns, names it in a warning, and finishes stopping", async () => {
    // a query of the store's own pool that would hold pool.end() for an hour
    const stuck = r!.svc.svc.db.prisma.$queryRawUnsafe("SELECT pg_sleep(3600)").then(
      () => "returned",
      (e: Error) => `failed: ${e.message}`,
    );
    await new Promise((res) => setTimeout(res, 200)); // the query is on the server
    await r!.svc.stop();
    expect(await stuck).toMatch(/^failed/);
    const warned = r!.svc.logs.filter((l) => l.level === "warn" && /PostgreSQL: connections still busy/.test(String(l.msg)));
    expect(warned).toHaveLength(1);
    expect(String(warned[0].msg)).toContain("pg_sleep(3600)");
    r = undefined;
  }, 45_000);
});
