// Dev tool (not a test): the round trip of one admission alone (one connection's case), on svc's
// own Redis connection (engines/cluster/redis.ts, auto-pipelining on), written at the end of the
// event-loop turn (svcAdmit, auto-pipelined: setImmediate) against at once (svcAdmitNow), in
// alternating rounds of one run, so a loaded machine disturbs both alike; medians of the rounds.
// Measured 2026-11-28 (load average 4): 405.6 µs auto-pipelined against 323.6 µs at once, yet
// a replica that wrote an admission alone at once served FEWER requests/s at one connection in
// 5 of 5 alternating pairs of bench/dev/scale-profile.ts runs (e.g. 185 against 356), so svc
// keeps auto-pipelining every admission: the round trip alone is not the one-connection gap.
// The svcAdmitNow command is defined here only (limits.lua, not auto-pipelined).
// node --import tsx bench/dev/scale-admit-latency.ts [rounds] [calls a round]
import { readFileSync } from "node:fs";
import path from "node:path";
import { connectRedis, waitReady } from "../../engines/cluster/redis";
import { startRedis } from "../../test/helpers/services";

const rounds = Number(process.argv[2] ?? 10);
const calls = Number(process.argv[3] ?? 2000);
const lua = readFileSync(path.resolve(import.meta.dirname, "../../engines/cluster/limits.lua"), "utf8");
const seed = readFileSync(path.resolve(import.meta.dirname, "../../engines/cluster/seed.lua"), "utf8");
const day = `day:${new Date().toISOString().slice(0, 10)}`;
const req = { k: "kb", lim: true, pm: 1e9, burst: 1e9, ph: 1e9, ents: ["kb", "team:o/t", "org:o"], day, month: `month:${day.slice(4, 11)}`, s: 0, t: 0, checks: [{ e: "kb", td: 1e12, bd: 1e12, bm: 1e12 }], p: "svc:", ttl: 900_000 };

const redis = await startRedis();
const r = connectRedis(redis.url, { name: "bench" });
r.defineCommand("svcAdmit", { numberOfKeys: 0, lua });
r.defineCommand("svcAdmitNow", { numberOfKeys: 0, lua });
type Admit = (arg: string) => Promise<unknown[]>;
const c = r as unknown as { svcAdmit: Admit; svcAdmitNow: Admit };
try {
  await waitReady(r);
  await r.eval(seed, 0, JSON.stringify({ p: "svc:", inc: "1", base: "", hold: 0, rows: [] }));
  let id = 0;
  const round = async (f: Admit) => {
    const t = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) {
      const v = await f(JSON.stringify({ ...req, id: `r-${++id}` }));
      if (v[0] !== "ok") throw new Error(`refused: ${JSON.stringify(v)}`);
    }
    return Number(process.hrtime.bigint() - t) / calls / 1000;
  };
  await round(c.svcAdmit.bind(c));
  await round(c.svcAdmitNow.bind(c));
  const piped: number[] = [], now: number[] = [];
  for (let i = 0; i < rounds; i++) {
    piped.push(await round(c.svcAdmit.bind(c)));
    now.push(await round(c.svcAdmitNow.bind(c)));
  }
  const med = (x: number[]) => [...x].sort((a, b) => a - b)[x.length >> 1];
  console.log(`one admission alone, round trip: auto-pipelined ${med(piped).toFixed(1)} µs, written at once ${med(now).toFixed(1)} µs (medians of ${rounds} alternating rounds of ${calls})`);
} finally {
  r.disconnect();
  await redis.stop();
}
