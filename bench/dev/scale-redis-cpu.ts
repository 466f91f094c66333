// Dev tool (not a test): Redis's own CPU time (INFO cpu, main thread: CPU time, not wall time, so
// a loaded machine disturbs it little) and commands per request of the shared-limits scripts, for
// the bench's key (rate, hour window, budget and token limits; key, team and organization), 50
// requests in flight: admission (limits.lua) then settle (settle.lua) each. With a git revision
// argument, that revision's scripts are measured in the same run, for a ratio.
// node --import tsx bench/dev/scale-redis-cpu.ts [revision] [requests]
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { Redis } from "ioredis";
import { startRedis } from "../../test/helpers/services";

const rev = process.argv[2];
const N = Number(process.argv[3] ?? 20_000);
const dir = path.resolve(import.meta.dirname, "../../engines/cluster");
const script = (f: string, at?: string) => (at ? execFileSync("git", ["show", `${at}:engines/cluster/${f}`], { cwd: dir, encoding: "utf8" }) : readFileSync(path.join(dir, f), "utf8"));
const day = `day:${new Date().toISOString().slice(0, 10)}`;
const month = `month:${day.slice(4, 11)}`;
const req = { k: "kb", lim: true, pm: 1e8, burst: 1e8, ph: 1e9, ents: ["kb", "team:o/t", "org:o"], day, month, s: 2000, t: 4112, checks: [{ e: "kb", td: 1e12, bd: 1e12, bm: 1e12 }] };

async function cpu(r: Redis): Promise<number> {
  const i = await r.info("cpu");
  const f = (k: string) => Number(new RegExp(`${k}:([\\d.]+)`).exec(i)?.[1] ?? 0);
  return f("used_cpu_sys_main_thread") + f("used_cpu_user_main_thread");
}

async function measure(r: Redis, at?: string): Promise<string> {
  await r.flushall();
  const admit = script("limits.lua", at), settle = script("settle.lua", at), seed = script("seed.lua", at);
  await r.eval(seed, 0, JSON.stringify({ p: "svc:", inc: "1", base: "", hold: 0, rows: [] }));
  const [sa, ss] = await Promise.all([r.script("LOAD", admit), r.script("LOAD", settle)]) as string[];
  let id = 0;
  const one = async () => {
    const myId = `r-${++id}`;
    const v = (await r.evalsha(sa, 0, JSON.stringify({ ...req, p: "svc:", id: myId, ttl: 900_000 }))) as unknown[];
    if (v[0] !== "ok") throw new Error(`refused: ${JSON.stringify(v)}`);
    const b = typeof v[3] === "string" ? { b: v[3] } : {};
    await r.evalsha(ss, 0, JSON.stringify({ p: "svc:", list: [{ id: myId, ents: req.ents, re: req.checks.map((c) => c.e), day, month, ...b, rs: req.s, rt: req.t, s: 1500, t: 30, served: true }] }));
  };
  for (let i = 0; i < 500; i++) await one(); // warm
  await r.config("RESETSTAT");
  const c0 = await cpu(r);
  for (let done = 0; done < N; done += 50) await Promise.all(Array.from({ length: 50 }, one));
  const us = ((await cpu(r)) - c0) * 1e6 / N;
  if (process.env.DETAIL) {
    // admissions alone (the settles' share is the rest)
    const a0 = await cpu(r);
    for (let done = 0; done < N; done += 50) await Promise.all(Array.from({ length: 50 }, () => r.evalsha(sa, 0, JSON.stringify({ ...req, p: "svc:", id: `x-${++id}`, ttl: 900_000, s: 0, t: 0 }))));
    console.log(`  admission alone (no reservation): ${(((await cpu(r)) - a0) * 1e6 / N).toFixed(1)} µs`);
  }
  const stats = await r.info("commandstats");
  if (process.env.DETAIL) console.log(await r.hgetall("svc:c:kb"), await r.object("ENCODING", "svc:c:kb"), await r.zcard("svc:rh:kb"));
  let inner = 0;
  for (const m of stats.matchAll(/cmdstat_(\w+):calls=(\d+)/g)) if (!["evalsha", "config", "info"].includes(m[1])) inner += Number(m[2]);
  if (process.env.DETAIL) for (const m of stats.matchAll(/cmdstat_(\w+):calls=(\d+),usec=(\d+)/g)) console.log(`  ${m[1]} ${(Number(m[2]) / N).toFixed(2)}/req ${(Number(m[3]) / N).toFixed(1)} µs/req`);
  return `${at ?? "worktree"}: ${us.toFixed(1)} µs of Redis CPU a request, ${(inner / N).toFixed(1)} commands inside the scripts a request (2 EVALSHA)`;
}

// REDIS_URL: a Redis started elsewhere (under callgrind, say) instead of a throwaway one
const redis = process.env.REDIS_URL ? undefined : await startRedis();
const r = new Redis(process.env.REDIS_URL ?? redis!.url);
try {
  // HASHTABLE=1: hashes as hash tables rather than listpacks (the cost of a field lookup)
  if (process.env.HASHTABLE) await r.config("SET", "hash-max-listpack-entries", "0");
  if (rev) console.log(await measure(r, rev));
  if (!process.env.ONLY_REV) console.log(await measure(r));
  if (rev) console.log(await measure(r, rev));
} finally {
  r.disconnect();
  await redis?.stop();
}
