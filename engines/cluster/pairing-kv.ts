// Pairing's short-lived state in Redis (engines/pairing/kv.ts): every replica sees the same
// challenges, pending requests, codes and lockout counts, used invites and secure sessions.
// Values expire with PX; single use is GETDEL or SET NX; a session's sequence number is raised by
// one script, so a replayed call is refused on every replica.
import type { Redis } from "ioredis";
import type { PairKv } from "../pairing/kv";

const RAISE = `local v = tonumber(redis.call('GET', KEYS[1]) or '-1')
if tonumber(ARGV[1]) <= v then return 0 end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then ttl = tonumber(ARGV[2]) end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
return 1`;
const INCR = `local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n`;

export function redisPairingKv(r: Redis, prefix: string): PairKv {
  const k = (key: string) => `${prefix}pair:${key}`;
  const ms = (t: number) => Math.max(1, Math.round(t));
  return {
    shared: true,
    async put(key, value, ttlMs) {
      await r.set(k(key), value, "PX", ms(ttlMs));
    },
    get: (key) => r.get(k(key)),
    take: (key) => r.getdel(k(key)),
    async claim(key, value, ttlMs) {
      return (await r.set(k(key), value, "PX", ms(ttlMs), "NX")) === "OK";
    },
    async del(keys) {
      if (keys.length) await r.del(...keys.map(k));
    },
    async incr(key, ttlMs) {
      return Number(await r.eval(INCR, 1, k(key), ms(ttlMs)));
    },
    async keys(p) {
      const out: string[] = [];
      const strip = k("").length;
      let cursor = "0";
      do {
        const [next, batch] = await r.scan(cursor, "MATCH", k(p) + "*", "COUNT", 1000);
        cursor = next;
        for (const x of batch) out.push(x.slice(strip));
      } while (cursor !== "0");
      return out;
    },
    async raise(key, to, ttlMs) {
      return Number(await r.eval(RAISE, 1, k(key), to, ms(ttlMs))) === 1;
    },
  };
}
