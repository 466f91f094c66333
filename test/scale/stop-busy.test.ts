// Closing the PostgreSQL store while its connections are in use (engines/store/pg-pool.ts): a
// transaction begun just before finishes and commits; a query that never returns is ended, named
// in a warning, and the stop still ends. Memory's own pool closes the same way.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import pg from "pg";
import { missingServices } from "../helpers/services";
import { tempDir } from "../helpers/svc";
import { openStore } from "../../engines/store/open";
import { openPgMemory } from "../../engines/memory/pg/open";
import { systemClock } from "../../engines/memory/clock";
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

  it("a transaction begun just before the store closes finishes and commits; nothing is ended", async () => {
    const warnings: string[] = [];
    const db = await openStore(await tempDir("svc-close-"), { env: { SVC_DATABASE_URL: shared.pg.url }, warn: (m) => warnings.push(m) });
    const tx = db.prisma.$transaction(async (t) => {
      await new Promise((r) => setTimeout(r, 50)); // still in the callback when close() is called
      await t.$executeRawUnsafe(`INSERT INTO meta (key, value) VALUES ('close-test', 'committed')`);
    }).then(() => "committed", (e: Error) => `failed: ${e.message}`);
    await new Promise((r) => setTimeout(r, 5));
    await db.close();
    expect(await tx).toBe("committed");
    expect(warnings).toEqual([]);
    const c = new pg.Client({ connectionString: shared.pg.url });
    await c.connect();
    expect((await c.query(`SELECT value FROM meta WHERE key = 'close-test'`)).rows).toEqual([{ value: "committed" }]);
    await c.end();
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

  it("memory's pool: a query that never returns is ended and named, and the close finishes", async () => {
    const warnings: string[] = [];
    const log = { info: () => undefined, warn: (m: string) => warnings.push(m), error: () => undefined, debug: () => undefined };
    const { backend } = await openPgMemory(shared.pg.url, log as never, () => systemClock, 500);
    const stuck = backend.pool.query("SELECT pg_sleep(3600)").then(() => "returned", (e: Error) => `failed: ${e.message}`);
    await new Promise((res) => setTimeout(res, 200));
    await backend.close();
    expect(await stuck).toMatch(/^failed/);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/PostgreSQL: connections still busy/);
    expect(warnings[0]).toContain("pg_sleep(3600)");
  }, 20_000);
});
