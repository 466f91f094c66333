// Memory's cluster-wide scheduler (engines/memory/pg/jobs.ts) on a throwaway PostgreSQL, with two
// schedulers standing for two replicas: an agent's consolidation lease is held by one of them at
// a time, and a session's due debounce is handed to exactly one of them.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { missingServices, startPostgres, type Service } from "../helpers/services";
import { migratePg } from "../../engines/store/pg-migrate";
import { memoryPool } from "../../engines/memory/pg/db";
import { PgScheduler } from "../../engines/memory/pg/jobs";
import { ManualClock } from "../../engines/memory/clock";
import type pg from "pg";

const missing = missingServices();
if (missing) console.warn(`test/scale skipped: ${missing}`);

describe.skipIf(!!missing)("memory jobs and leases across replicas", () => {
  let pgs: Service;
  const pools: pg.Pool[] = [];
  const scheds: PgScheduler[] = [];
  const clock = new ManualClock();
  const due: Array<{ replica: number; agent: string; conv: string; trigger: string }> = [];

  beforeAll(async () => {
    pgs = await startPostgres();
    await migratePg(pgs.url);
    for (let i = 0; i < 2; i++) {
      const pool = memoryPool(pgs.url).pool;
      const s = new PgScheduler(pool, () => clock, 60_000); // polled by the test (tick), not a timer
      s.start({ due: (agent, conv, trigger) => void due.push({ replica: i, agent, conv, trigger }), consolidationDue: () => undefined, warn: () => undefined });
      pools.push(pool);
      scheds.push(s);
    }
  }, 60_000);

  afterAll(async () => {
    for (const s of scheds) await s.close();
    for (const p of pools) await p.end();
    await pgs?.stop();
  });

  it("one consolidation of an agent at a time, whichever replica asks", async () => {
    let active = 0;
    let most = 0;
    const order: string[] = [];
    const work = (who: string) => async () => {
      active++;
      most = Math.max(most, active);
      order.push(`${who}+`);
      await new Promise((r) => setTimeout(r, 40));
      order.push(`${who}-`);
      active--;
      return who;
    };
    const done = await Promise.all([0, 1, 0, 1, 0, 1].map((r, i) => scheds[r].exclusive("consolidate", "agent-a", "", work(`r${r}#${i}`))));
    expect(done).toHaveLength(6);
    expect(most).toBe(1);
    for (let i = 0; i < order.length; i += 2) expect(order[i + 1]).toBe(order[i].replace("+", "-"));
    const left = await pools[0].query(`SELECT COUNT(*) AS n FROM memoryjob WHERE kind = 'consolidating'`);
    expect(left.rows[0].n).toBe(0); // released: nothing is left held
  });

  it("a debounce armed on both replicas falls due on exactly one", async () => {
    await scheds[0].arm("agent-b", "c1", 10_000, "debounce");
    await scheds[1].arm("agent-b", "c1", 20_000, "debounce"); // a later turn pushes it back
    await Promise.all(scheds.map((s) => s.tick()));
    expect(due).toEqual([]);
    clock.advance(15_000);
    await Promise.all(scheds.map((s) => s.tick()));
    expect(due).toEqual([]); // pushed back to 20 s
    clock.advance(6_000);
    await Promise.all([scheds[0].tick(), scheds[1].tick(), scheds[0].tick(), scheds[1].tick()]);
    expect(due.map((d) => [d.agent, d.conv, d.trigger])).toEqual([["agent-b", "c1", "debounce"]]);
  });

  it("a replica that dies while distilling: its lease runs out, another takes the session over", async () => {
    const pool = memoryPool(pgs.url).pool;
    pools.push(pool);
    const doomed = new PgScheduler(pool, () => clock, 60_000, 300);
    doomed.start({ due: () => undefined, consolidationDue: () => undefined, warn: () => undefined });
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    void doomed.exclusive("distill", "agent-c", "c1", () => (entered(), new Promise<never>(() => undefined))); // never finishes
    await inside;
    await doomed.close(); // dies: no more heartbeats, the lease is never released
    let ran = false;
    const other = new PgScheduler(pools[0], () => clock, 60_000, 300);
    await other.exclusive("distill", "agent-c", "c1", async () => void (ran = true)); // waits for the lease to run out
    expect(ran).toBe(true);
    // a session a dead replica still holds is handed to a live one by the poll, once its lease ran out
    const dead = new PgScheduler(pool, () => clock, 60_000, 300);
    let held!: () => void;
    const holding = new Promise<void>((r) => (held = r));
    void dead.exclusive("distill", "agent-c", "c2", () => (held(), new Promise<never>(() => undefined)));
    await holding;
    await dead.close();
    const before = due.length;
    for (let i = 0; i < 40 && due.length === before; i++) {
      await new Promise((r) => setTimeout(r, 50));
      await scheds[1].tick();
    }
    expect(due.slice(before).map((d) => [d.replica, d.agent, d.conv])).toEqual([[1, "agent-c", "c2"]]);
  });
});
