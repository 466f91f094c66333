// Working on the store directly when no server answers: the SQLite file in the data dir, or, when
// SVC_DATABASE_URL is set, the PostgreSQL database the replicas of a scale-out deployment share
// (engines/store/open.ts, the same one `svc serve` opens). A running server notices these writes
// on its next resync (ResourceStore.reload sees the revision moved); replicas sharing Redis
// (SVC_REDIS_URL set here too) are told at once, as for their own writes.
import { mkdir } from "node:fs/promises";
import { existsSync } from "node:fs";
import type { ResourceStore } from "../prisma/resource-store";
import { storeFile } from "../engines/paths";
import { CliError } from "./errors";

/** The PostgreSQL URL of SVC_DATABASE_URL (undefined: the SQLite file); a bad one is a CliError. */
export async function offlinePgUrl(env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  if (!env.SVC_DATABASE_URL?.trim()) return undefined; // no import of the store module otherwise
  const { postgresUrlOf } = await import("../engines/store/open");
  try {
    return postgresUrlOf(env);
  } catch (e) {
    throw new CliError(oneLine(e));
  }
}

/** A URL fit to print: no password, no query string (it may hold one). */
export function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    const user = u.username ? `${decodeURIComponent(u.username)}${u.password ? ":***" : ""}@` : "";
    return `${u.protocol}//${user}${u.host}${u.pathname}`;
  } catch {
    return "(SVC_DATABASE_URL, not a valid URL)";
  }
}

/** What the offline CLI works on, for its messages. */
export async function offlineStoreLabel(home: string): Promise<string> {
  const url = await offlinePgUrl();
  return url ? `the PostgreSQL store ${safeUrl(url)} (SVC_DATABASE_URL)` : storeFile(home);
}

/** Is there a store to read? The SQLite file exists, or the PostgreSQL database answers (an
 * unreachable or refused one is a CliError naming it, in one line). */
export async function offlineStoreExists(home: string): Promise<boolean> {
  const url = await offlinePgUrl();
  if (!url) return existsSync(storeFile(home));
  const pg = (await import("pg")).default;
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  try {
    await c.connect();
    await c.query("SELECT 1");
    return true;
  } catch (e) {
    throw unreachable(url, e);
  } finally {
    await c.end().catch(() => undefined);
  }
}

/** Run `f` on the store's objects (and its database, for what reads the audit log: plan --replay). */
export async function withOfflineStore<T>(home: string, f: (store: ResourceStore, db: import("../prisma/client").OpenedDb) => Promise<T>): Promise<T> {
  await mkdir(home, { recursive: true });
  const url = await offlinePgUrl();
  // Prisma loads in ~0.2 s: only when a command works offline
  const { ResourceStore } = await import("../prisma/resource-store");
  let db: import("../prisma/client").OpenedDb;
  if (url) {
    if (!(await offlineStoreExists(home))) throw new CliError(`no store at ${safeUrl(url)}`); // (throws first when unreachable)
    const { openStore } = await import("../engines/store/open");
    db = await openStore(home, { backgroundCheckpoints: false }).catch((e) => {
      throw unreachable(url, e);
    });
  } else {
    const { openDb } = await import("../prisma/client");
    db = await openDb(storeFile(home), { backgroundCheckpoints: false });
  }
  try {
    const store = await ResourceStore.open(db.prisma, db.repos.resources);
    const quiet = url ? announce(store) : undefined;
    try {
      return await f(store, db);
    } finally {
      await store.close();
      quiet?.();
    }
  } finally {
    await db.close();
  }
}

/** With SVC_REDIS_URL, each offline write is announced to the running replicas the way their own
 * are (engines/cluster/bus.ts: revoked keys marked, a re-read message) instead of waiting for
 * their periodic re-read. Best effort: the write is done either way. Returns the disconnect. */
function announce(store: ResourceStore): (() => void) | undefined {
  const url = process.env.SVC_REDIS_URL?.trim();
  if (!url) return undefined;
  let redis: import("ioredis").Redis | undefined;
  store.afterCommit = async (refs, revision) => {
    try {
      (await import("../engines/cluster")).redisUrlOf(process.env); // the server's own URL check (redis://, rediss://, unix://)
      const { connectRedis, waitReady } = await import("../engines/cluster/redis");
      const { broadcastChange } = await import("../engines/cluster/bus");
      redis ??= connectRedis(url, { name: "cli" });
      await waitReady(redis, 3000);
      await broadcastChange(redis, store, { prefix: process.env.SVC_REDIS_PREFIX?.trim() || "svc:", from: "cli" }, refs, revision);
    } catch (e) {
      process.stderr.write(`note: could not tell the running replicas through Redis (${oneLine(e)}); they pick the change up at their next periodic re-read\n`);
    }
  };
  return () => redis?.disconnect();
}

function unreachable(url: string, e: unknown): CliError {
  return new CliError(`cannot use the PostgreSQL store ${safeUrl(url)} (SVC_DATABASE_URL): ${oneLine(e)}`);
}

function oneLine(e: unknown): string {
  const m = String((e as Error)?.message || (e as { code?: string })?.code || e);
  return m.split("\n").map((l) => l.trim()).filter(Boolean)[0] ?? "unknown error";
}
