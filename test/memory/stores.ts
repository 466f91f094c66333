// The two stores memory runs on, behind one surface, so a test body runs against both
// (describe.each): the embedded SQLite file (one svc) and PostgreSQL shared by two replicas (one
// PostgreSQL and Redis; writes through `on(0)`, reads through `on(1)` show they share it). Both
// run the extraction script of env.ts and a ManualClock shared by their memory engines.
import { startMemEnv, EXTRACTOR, extractorAnswer } from "./env";
import { missingServices } from "../helpers/services";
import { scriptedProvider } from "../agents/scripted";
import { ManualClock } from "../../engines/memory/clock";
import type { PgScheduler } from "../../engines/memory/pg/jobs";
import { startCluster, everywhere, type Replica } from "../scale/cluster";

type Api = (method: string, p: string, body?: unknown) => Promise<{ status: number; json: any }>;

export interface MemStore {
  /** replica i's API (the one svc on SQLite) */
  on(i: 0 | 1): { api: Api };
  agent(name: string): Promise<void>;
  memoryConfig(spec: Record<string, unknown>): Promise<void>;
  /** move the clock; what falls due runs (on PostgreSQL: taken by one replica), and is waited for */
  advance(ms: number): Promise<void>;
  stop(): Promise<void>;
}

export interface StoreCase {
  name: "sqlite" | "postgresql";
  /** why this store cannot run here (PostgreSQL or Redis missing), else null */
  missing: string | null;
  start(models: string[]): Promise<MemStore>;
}

async function sqliteStore(models: string[]): Promise<MemStore> {
  const env = await startMemEnv(models);
  return { on: () => ({ api: env.api }), agent: (n) => env.agent(n), memoryConfig: (s) => env.memoryConfig(s), advance: (ms) => env.advance(ms), stop: () => env.stop() };
}

async function postgresStore(models: string[]): Promise<MemStore> {
  const up = await scriptedProvider();
  up.script(EXTRACTOR, (b) => ({ text: extractorAnswer(b) }));
  let rs: Replica[] = [];
  let stop: (() => Promise<void>) | undefined;
  try {
    ({ rs, stop } = await startCluster(2));
  } catch (e) {
    await up.close();
    throw e;
  }
  // the replicas armed the cluster's consolidation interval on the real clock: start there
  const clock = new ManualClock(Date.now());
  for (const r of rs) r.svc.svc.engines.memory!.useClock(clock);
  const idle = () => Promise.all(rs.map((r) => r.svc.svc.engines.memory!.idle()));
  const write = async (kind: string, name: string, spec: Record<string, unknown>) => {
    await rs[0].svc.svc.store.write([{ op: "upsert", kind, name, owner: "config:test", spec }]);
    await everywhere(rs, kind, name, (s) => Object.entries(spec).every(([k, v]) => JSON.stringify(s[k]) === JSON.stringify(v)));
  };
  const all = [...new Set([EXTRACTOR, ...models])];
  await write("Provider", "scripted", { type: "openai", baseUrl: up.baseUrl, timeoutSeconds: 10, models: all.map((name) => ({ name, inputPerMillion: 1, outputPerMillion: 2 })) });
  await write("MemoryConfig", "memory", { extractionModel: EXTRACTOR });
  return {
    on: (i) => ({ api: (m, p, b) => rs[i].api(m, p, b) }),
    agent: (name) => write("Agent", name, { instructions: `You are ${name}.`, defaultModel: name, memory: true, maxIterations: 4 }),
    memoryConfig: (spec) => write("MemoryConfig", "memory", { extractionModel: EXTRACTOR, ...spec }),
    async advance(ms) {
      clock.advance(ms);
      for (const r of rs) await (r.svc.svc.engines.memory!.sched as PgScheduler).tick();
      await idle();
    },
    async stop() {
      await stop?.();
      await up.close();
    },
  };
}

export const STORES: StoreCase[] = [
  { name: "sqlite", missing: null, start: sqliteStore },
  { name: "postgresql", missing: missingServices(), start: postgresStore },
];
