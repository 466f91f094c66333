// Dev tool (not a test): Redis's own CPU time (INFO cpu, main thread: CPU time, not wall time, so
// a loaded machine disturbs it little) and commands per request of the shared limits' script
// (engines/cluster/limits.lua), for the bench's key (rate, hour window, budget and token limits;
// key, team and organization): calls of B admissions and the B settles of the previous call, as
// a replica sends one event-loop turn (B=1: one request a turn; the scale bench's 50 connections
// make turns of about 10). SCRIPT=<file>: another version of the whole script (windows.lua and
// limits.lua in one file), measured in the same run.
// FULL_WINDOW=1: the key's hour window starts with all its slices filled, as after an hour of load.
// node --import tsx bench/dev/scale-redis-cpu.ts [B,B,...] [requests]
import { readFileSync } from "node:fs";
import path from "node:path";
import { Redis } from "ioredis";
import { startRedis } from "../../test/helpers/services";
import { turnPayload } from "../../engines/cluster/turn-payload";
import { turnScript } from "../../engines/cluster/shared-limits";
import type { SharedRequest } from "../../engines/gateway/limits/types";
import type { SettleItem } from "../../engines/cluster/usage-ledger";

const sizes = (process.argv[2] ?? "1,10,50").split(",").map(Number);
const N = Number(process.argv[3] ?? 20_000);
const dir = path.resolve(import.meta.dirname, "../../engines/cluster");
const day = `day:${new Date().toISOString().slice(0, 10)}`;
const month = `month:${day.slice(4, 11)}`;
const req: SharedRequest = { k: "kb", lim: true, pm: 1e8, burst: 1e8, ph: 1e9, ents: ["kb", "team:o/t", "org:o"], day, month, s: 2000, t: 4112, checks: [{ e: "kb", whose: "", td: 1e12, bd: 1e12, bm: 1e12 }] };

async function cpu(r: Redis): Promise<number> {
  const i = await r.info("cpu");
  const f = (k: string) => Number(new RegExp(`${k}:([\\d.]+)`).exec(i)?.[1] ?? 0);
  return f("used_cpu_sys_main_thread") + f("used_cpu_user_main_thread");
}

async function measure(r: Redis, file: string, B: number): Promise<string> {
  await r.flushall();
  await r.eval(readFileSync(path.join(dir, "seed.lua"), "utf8"), 0, JSON.stringify({ p: "svc:", inc: "1", base: "", hold: 0, rows: [] }));
  const sha = (await r.script("LOAD", file === "worktree" ? turnScript() : readFileSync(file, "utf8"))) as string;
  if (process.env.FULL_WINDOW) {
    // the hour window of a key busy for an hour: all 120 slices hold admissions (as at steady state)
    const [sec] = await r.time();
    const width = 30_000;
    const top = Math.floor((Number(sec) * 1000) / width) * width;
    const slices: Record<string, number> = {};
    for (let i = 0; i < 119; i++) slices[String(top - i * width)] = 1_000;
    await r.hset("svc:rh:kb#", { ...slices, n: 119_000, c: top - 120 * width });
  }
  let id = 0;
  let settles: SettleItem[] = [];
  const turn = async () => {
    const admits = Array.from({ length: B }, () => ({ req, id: `r-${++id}` }));
    const v = (await r.evalsha(sha, 0, turnPayload("svc:", 900_000, settles, admits))) as unknown[];
    for (let i = 2; i < v.length; i++) if ((v[i] as unknown[])[0] !== "ok") throw new Error(`refused: ${JSON.stringify(v[i])}`);
    settles = admits.map(({ id }) => ({ id, ents: req.ents, re: ["kb"], day, month, rs: req.s, rt: req.t, s: 1500, t: 30, served: true }));
  };
  for (let i = 0; i < 500 / B; i++) await turn(); // warm
  await r.config("RESETSTAT");
  const c0 = await cpu(r);
  // several calls in flight, as from several replicas' turns
  for (let done = 0; done < N; done += 4 * B) await Promise.all([turn(), turn(), turn(), turn()]);
  const us = ((await cpu(r)) - c0) * 1e6 / N;
  const stats = await r.info("commandstats");
  let inner = 0;
  for (const m of stats.matchAll(/cmdstat_(\w+):calls=(\d+)/g)) if (!["evalsha", "config", "info"].includes(m[1])) inner += Number(m[2]);
  if (process.env.DETAIL) for (const m of stats.matchAll(/cmdstat_(\w+):calls=(\d+),usec=(\d+)/g)) console.log(`  ${m[1]} ${(Number(m[2]) / N).toFixed(2)}/req ${(Number(m[3]) / N).toFixed(2)} µs/req`);
  return `${path.basename(file)} B=${B}: ${us.toFixed(1)} µs of Redis CPU a request, ${(inner / N).toFixed(2)} commands inside the script a request`;
}

// REDIS_URL: a Redis started elsewhere (under callgrind, say) instead of a throwaway one
const redis = process.env.REDIS_URL ? undefined : await startRedis();
const r = new Redis(process.env.REDIS_URL ?? redis!.url);
try {
  const files = ["worktree", ...(process.env.SCRIPT ? [path.resolve(process.env.SCRIPT)] : [])];
  for (const B of sizes) for (const f of files) console.log(await measure(r, f, B));
} finally {
  r.disconnect();
  await redis?.stop();
}
