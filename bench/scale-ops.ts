// What one request costs the shared services (bench/scale.ts): Redis commands from `INFO
// commandstats` and PostgreSQL statements from pg_stat_statements, read before and after a load
// run, so the difference divided by the requests served is the work per request. Scripts count
// once as EVALSHA (the commands they run inside are listed too, as Redis counts them).
import { Redis } from "ioredis";
import pg from "pg";

/** Commands svc's Lua scripts run (engines/cluster/*.lua); svc itself sends none of them on the
 * request path, so with scripts present they are counted as the scripts' work, not round trips. */
const INNER = ["hset", "hget", "hmget", "hgetall", "hkeys", "hdel", "mget", "hincrby", "hincrbyfloat", "zadd", "zrem", "zmscore", "zrangebyscore", "zremrangebyscore", "zcard", "zrange", "incr", "pexpire", "pttl", "time", "sismember", "get"];

export interface OpsSnapshot {
  redis: Record<string, { calls: number; usec: number }>;
  pg: Record<string, { calls: number; ms: number; rows: number }>;
}

export interface OpsPerRequest {
  requests: number;
  /** Redis commands (round trips from svc: EVALSHA, plus any plain command) per request */
  redis: Array<{ cmd: string; perRequest: number; usecPerCall: number }>;
  redisCalls: number;
  /** PostgreSQL statements per request (BEGIN/COMMIT included) */
  pg: Array<{ query: string; perRequest: number; msPerCall: number; rowsPerCall: number }>;
  pgCalls: number;
}

/** pg_stat_statements must be preloaded: startPostgres(PG_STATS). */
export const PG_STATS = ["shared_preload_libraries=pg_stat_statements", "pg_stat_statements.track_utility=on"];

export class OpsProbe {
  private constructor(private readonly redis: Redis, private readonly db: pg.Client) {}

  static async open(redisUrl: string, pgUrl: string): Promise<OpsProbe> {
    const redis = new Redis(redisUrl, { connectionName: "bench-probe", maxRetriesPerRequest: 1 });
    const db = new pg.Client({ connectionString: pgUrl, application_name: "bench-probe" });
    await db.connect();
    await db.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    return new OpsProbe(redis, db);
  }

  async snapshot(): Promise<OpsSnapshot> {
    const info = await this.redis.info("commandstats");
    const redis: OpsSnapshot["redis"] = {};
    for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) redis[m[1]] = { calls: Number(m[2]), usec: Number(m[3]) };
    // the probe's own statements are left out by application: pg_stat_statements has no such
    // column, so they are left out by text instead
    const { rows } = await this.db.query(
      `SELECT query, SUM(calls)::float8 AS calls, SUM(total_exec_time)::float8 AS ms, SUM(rows)::float8 AS rows FROM pg_stat_statements
       WHERE query NOT ILIKE '%pg_stat_statements%' AND query NOT ILIKE '%commandstats%' GROUP BY query`,
    );
    const pgs: OpsSnapshot["pg"] = {};
    for (const r of rows) pgs[String(r.query)] = { calls: Number(r.calls), ms: Number(r.ms), rows: Number(r.rows) };
    return { redis, pg: pgs };
  }

  /** The work between two snapshots, per request served. */
  static perRequest(a: OpsSnapshot, b: OpsSnapshot, requests: number): OpsPerRequest {
    const n = Math.max(1, requests);
    const redis = Object.entries(b.redis)
      .map(([cmd, v]) => ({ cmd, calls: v.calls - (a.redis[cmd]?.calls ?? 0), usec: v.usec - (a.redis[cmd]?.usec ?? 0) }))
      .filter((x) => x.calls > 0 && x.cmd !== "info")
      .map((x) => ({ cmd: x.cmd, perRequest: x.calls / n, usecPerCall: x.usec / x.calls }))
      .sort((x, y) => y.perRequest - x.perRequest);
    const pgs = Object.entries(b.pg)
      .map(([query, v]) => ({ query, calls: v.calls - (a.pg[query]?.calls ?? 0), ms: v.ms - (a.pg[query]?.ms ?? 0), rows: v.rows - (a.pg[query]?.rows ?? 0) }))
      .filter((x) => x.calls > 0)
      .map((x) => ({ query: x.query.replace(/\s+/g, " ").slice(0, 90), perRequest: x.calls / n, msPerCall: x.ms / x.calls, rowsPerCall: x.rows / x.calls }))
      .sort((x, y) => y.perRequest - x.perRequest);
    // round trips from svc: top-level commands (a script's inner commands are counted by Redis too)
    const inner = new Set(INNER);
    const scripted = redis.some((x) => x.cmd === "evalsha" || x.cmd === "eval");
    return {
      requests,
      redis,
      redisCalls: redis.filter((x) => !scripted || !inner.has(x.cmd)).reduce((s, x) => s + x.perRequest, 0),
      pg: pgs,
      pgCalls: pgs.reduce((s, x) => s + x.perRequest, 0),
    };
  }

  async close(): Promise<void> {
    this.redis.disconnect();
    await this.db.end().catch(() => undefined);
  }
}

/** Redis's busy time per request (µs): its scripts' time, which includes the commands they ran,
 * plus the plain commands svc sends. */
export function redisUsecPerRequest(o: OpsPerRequest): number {
  const scripted = o.redis.some((x) => x.cmd === "evalsha" || x.cmd === "eval");
  const inner = new Set(INNER);
  return o.redis.filter((x) => !scripted || !inner.has(x.cmd)).reduce((s, x) => s + x.perRequest * x.usecPerCall, 0);
}

/** PostgreSQL's execution time per request (ms), every statement. */
export const pgMsPerRequest = (o: OpsPerRequest): number => o.pg.reduce((s, x) => s + x.perRequest * x.msPerCall, 0);

/** The report's lines on the shared services' work per request and what it predicts for n
 * replicas: n × the measured replica, unless Redis (one thread) or PostgreSQL (`pgCores`
 * busy) is saturated first. */
export function opsReport(o: OpsPerRequest, perReplica: number, pgCores = 4): { lines: string[]; data: Record<string, unknown> } {
  const redisUs = redisUsecPerRequest(o);
  const pgMs = pgMsPerRequest(o);
  const redisCap = redisUs > 0 ? 1e6 / redisUs : Infinity;
  const pgCap = pgMs > 0 ? (pgCores * 1000) / pgMs : Infinity;
  const fmt = (x: number) => (Number.isFinite(x) ? Math.round(x).toLocaleString("en") : "unbounded");
  const predict = (n: number) => Math.min(n * perReplica, redisCap, pgCap);
  const bound = (n: number) => (n * perReplica <= Math.min(redisCap, pgCap) ? "the replicas" : redisCap < pgCap ? "Redis" : "PostgreSQL");
  const lines = [
    `Work per request on the shared services (1 replica, 50 connections, ${Math.round(o.requests).toLocaleString("en")} requests): Redis ${o.redisCalls.toFixed(2)} commands from svc a request (scripts: ${o.redis.filter((x) => x.cmd === "evalsha").map((x) => x.perRequest.toFixed(2)).join("") || "0"} EVALSHA; INFO commandstats, which also counts the commands a script runs), ${redisUs.toFixed(0)} µs of Redis's one thread a request; PostgreSQL ${o.pgCalls.toFixed(3)} statements a request (pg_stat_statements, background work included: audit batches, counter copies, task and webhook polls), ${(pgMs * 1000).toFixed(0)} µs of execution a request.`,
    "",
    "| Redis command | per request | µs per call |",
    "|---|---|---|",
    ...o.redis.slice(0, 16).map((x) => `| ${x.cmd} | ${x.perRequest.toFixed(3)} | ${x.usecPerCall.toFixed(1)} |`),
    "",
    "| PostgreSQL statement | per request | ms per call | rows per call |",
    "|---|---|---|---|",
    ...o.pg.slice(0, 8).map((x) => `| \`${x.query.replace(/\|/g, "\\|")}\` | ${x.perRequest.toFixed(4)} | ${x.msPerCall.toFixed(3)} | ${x.rowsPerCall.toFixed(1)} |`),
    "",
    `Scale-out on paper: Redis saturates near ${fmt(redisCap)} requests/s (10^6 µs / ${redisUs.toFixed(0)} µs a request, one thread), PostgreSQL near ${fmt(pgCap)} (${pgCores} busy cores / ${(pgMs * 1000).toFixed(0)} µs a request). With ${Math.round(perReplica).toLocaleString("en")} requests/s per replica (measured above, one core): 4 replicas ≈ ${fmt(predict(4))} requests/s (bound: ${bound(4)}), 16 replicas ≈ ${fmt(predict(16))} (bound: ${bound(16)}). Redis's µs here are measured on this loaded 2-core machine, where Redis shares a core with the load generator and the stand-in upstream; a dedicated Redis core is faster, so these bounds are low.`,
  ];
  return { lines, data: { ops: o, redisUsPerRequest: redisUs, pgMsPerRequest: pgMs, redisCap, pgCap, predicted: { 4: predict(4), 16: predict(16) } } };
}
