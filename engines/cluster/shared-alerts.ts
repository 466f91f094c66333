// What the gateway's alerts share across replicas on Redis (engines/gateway/alerts/alerts.ts
// asks; this answers): the right to send a throttled alert (key.limit_exceeded once a minute,
// key.suspicious_activity once an hour), claimed with SET NX PX, and the failed-authentication
// counts per IP and per token prefix, so failures spread over replicas add up (failures.lua).
import { readFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Redis } from "ioredis";
import type { SharedAlerts } from "../gateway/alerts/alerts";

const here = path.dirname(fileURLToPath(import.meta.url));
const FAILURES = readFileSync(path.join(here, "failures.lua"), "utf8");

type WithScripts = Redis & { svcFailure(key: string, windowMs: number, threshold: number, member: string): Promise<number> };

export function redisAlerts(redis: Redis, opts: { prefix: string; replicaId: string }): SharedAlerts {
  redis.defineCommand("svcFailure", { numberOfKeys: 1, lua: FAILURES });
  const r = redis as WithScripts;
  const tag = randomBytes(4).toString("hex");
  let seq = 0;
  return {
    async claim(id, ttlMs) {
      return (await r.set(`${opts.prefix}alert:${id}`, opts.replicaId, "PX", ttlMs, "NX")) === "OK";
    },
    countFailure(subject, windowMs, threshold) {
      return r.svcFailure(`${opts.prefix}authfail:${subject}`, windowMs, threshold, `${tag}-${(++seq).toString(36)}`);
    },
  };
}
