// Redis connections for the cluster parts. Commands never queue while Redis is down
// (enableOfflineQueue: false): a limited request is refused at once with a 503 instead of
// hanging, and the client keeps reconnecting in the background, so service resumes by itself.
// Auto-pipelining: under load, one write(2) carries every command of an event-loop turn instead
// of one each. The limits' own calls are batched a turn already (shared-limits.ts) and go at once.
import { Redis } from "ioredis";

export function connectRedis(url: string, opts: { name: string; onError?: (e: Error) => void; subscriber?: boolean }): Redis {
  const r = new Redis(url, {
    connectionName: `svc-${opts.name}`,
    enableOfflineQueue: !!opts.subscriber, // a subscriber must be able to (re)subscribe before it is connected
    maxRetriesPerRequest: 0,
    commandTimeout: opts.subscriber ? undefined : 2000,
    retryStrategy: (n) => Math.min(100 * n, 1000),
    lazyConnect: false,
    // commands issued in the same tick (counter reads, alert claims, failed-auth counts) leave in one write
    enableAutoPipelining: !opts.subscriber,
    // a turn's admissions and settles are one call already (engines/cluster/shared-limits.ts)
    autoPipeliningIgnoredCommands: ["svcTurn"],
  });
  // ioredis emits "error" for every failed reconnect: report the first of a run only
  let down = false;
  r.on("error", (e) => {
    if (down) return;
    down = true;
    opts.onError?.(e);
  });
  r.on("ready", () => (down = false));
  return r;
}

export async function waitReady(r: Redis, ms = 5000): Promise<void> {
  if (r.status === "ready") return;
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`Redis not reachable within ${ms} ms`)), ms);
    r.once("ready", () => {
      clearTimeout(t);
      resolve();
    });
  });
}
