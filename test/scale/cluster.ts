// Fixtures for the scale-out tests: a throwaway PostgreSQL and Redis, N svc replicas in this
// process on loopback sharing them (same SVC_ADMIN_KEY), and a child replica that can be killed.
import OpenAI from "openai";
import { Redis } from "ioredis";
import { startPostgres, startRedis, type Service, type RedisService } from "../helpers/services";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";
import { until } from "../helpers/http";
import { startServeChild, type ServeChild } from "../helpers/serve-child";
import { provider, standIn, type StandIn } from "../gateway/fixtures";

export const ADMIN = "sk-svc-scaleTestAdminKey0000000000000000000000000";

export interface Shared {
  pg: Service;
  redis: RedisService;
  env: Record<string, string>;
  stop(): Promise<void>;
}

/** Start PostgreSQL and Redis and point this process's svc at them (restored by stop()). */
export async function startShared(): Promise<Shared> {
  const [pg, redis] = await Promise.all([startPostgres(), startRedis()]);
  const env = { SVC_DATABASE_URL: pg.url, SVC_REDIS_URL: redis.url, SVC_ADMIN_KEY: ADMIN, SVC_LEASE_RETRY_MS: "200" };
  const saved: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(env)) {
    saved[k] = process.env[k];
    process.env[k] = v;
  }
  return {
    pg,
    redis,
    env,
    async stop() {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      await Promise.all([pg.stop(), redis.stop()]);
    },
  };
}

export interface Replica {
  svc: TestSvc;
  url: string;
  client(key: string): OpenAI;
  api(method: string, p: string, body?: unknown, key?: string): Promise<{ status: number; json: any }>;
}

export async function startReplica(): Promise<Replica> {
  const svc = await startTestSvc({ home: await tempDir("svc-replica-"), resyncMs: 0 });
  if (!svc.svc.engines.gateway) throw new Error("gateway did not start: " + JSON.stringify(svc.logs.filter((l) => l.level !== "info")));
  const url = svc.url;
  return {
    svc,
    url,
    client: (key) => new OpenAI({ apiKey: key, baseURL: `${url}/v1`, maxRetries: 0, timeout: 20_000 }),
    async api(method, p, body, key = ADMIN) {
      const res = await fetch(url + p, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
        body: body !== undefined ? JSON.stringify(body) : undefined,
      });
      const text = await res.text();
      let json: any = text;
      try {
        json = JSON.parse(text);
      } catch {
        /* text */
      }
      return { status: res.status, json };
    },
  };
}

/** Wait until every replica's store holds the object (they re-read on the pub/sub message). */
export async function everywhere(rs: Replica[], kind: string, name: string, pred: (spec: any) => boolean = () => true): Promise<void> {
  await until(() => rs.every((r) => {
    const o = r.svc.svc.store.get(kind, name);
    return !!o && pred(o.spec);
  }), 10_000);
}

export function tally(results: PromiseSettledResult<unknown>[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of results) {
    const k = r.status === "fulfilled" ? "ok" : `${(r.reason as any)?.status} ${(r.reason as any)?.code}`;
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}

/** Subscribe to the store-change channel; `next()` resolves on the next message. */
export async function listen(url: string, channel = "svc:changes") {
  const sub = new Redis(url);
  await sub.subscribe(channel);
  let waiters: Array<() => void> = [];
  sub.on("message", () => {
    const w = waiters;
    waiters = [];
    for (const f of w) f();
  });
  return {
    next: () => new Promise<void>((r) => waiters.push(r)),
    close: () => sub.quit().then(() => undefined),
  };
}

export type ChildReplica = ServeChild;

/** A replica as its own process (`svc serve`), so it can die with SIGKILL. */
export async function startChildReplica(env: Record<string, string>): Promise<ChildReplica> {
  const home = await tempDir("svc-child-");
  return startServeChild(["--port", "0", "--no-quickstart"], { ...env, SVC_HOME: home });
}

/** `n` replicas on a fresh PostgreSQL + Redis, routing "gpt-x" ($1 per million tokens) and
 * "dollar" ($1 a token: max_tokens 5 reserves $13 and spends $7) to a stand-in upstream that
 * bills 2 prompt and 5 completion tokens; Ready on every replica. `stop` tears it all down. */
export async function startCluster(n: number): Promise<{ shared: Shared; up: StandIn; rs: Replica[]; stop(): Promise<void> }> {
  const shared = await startShared();
  const up = await standIn({ promptTokens: 2, completionTokens: 5 });
  const rs: Replica[] = [];
  const stop = async () => {
    for (const r of rs) {
      await r.svc.stop().catch(() => undefined);
      // a connection found stuck at stop (engines/store/pg-pool.ts): shown, so CI's log says which
      for (const l of r.svc.logs) if (l.level === "warn" && /^PostgreSQL: /.test(String(l.msg))) console.warn(`replica ${r.url}: ${l.msg}`);
    }
    await up.close();
    await shared.stop();
  };
  try {
    for (let i = 0; i < n; i++) rs.push(await startReplica());
    const spec = provider("up", up, [{ name: "gpt-x", inputPerMillion: 1, outputPerMillion: 1 }, { name: "dollar", inputPerMillion: 1e6, outputPerMillion: 1e6 }]).spec;
    await rs[0].svc.svc.store.write([{ op: "upsert", kind: "Provider", name: "up", owner: "config:test", spec }]);
    await everywhere(rs, "Provider", "up");
  } catch (e) {
    await stop();
    throw e;
  }
  return { shared, up, rs, stop };
}

/** A key created on replica `on`, once every replica has it. */
export async function clusterKey(rs: Replica[], body: Record<string, unknown>, on = 0): Promise<{ id: string; secret: string }> {
  const r = await rs[on].api("POST", "/v1/api-keys", body);
  if (r.status !== 201) throw new Error(`key creation failed: ${r.status} ${JSON.stringify(r.json)}`);
  await everywhere(rs, "ApiKey", r.json.id);
  return { id: r.json.id as string, secret: r.json.api_key as string };
}
