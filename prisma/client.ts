// The Prisma client factory: one SQLite file in the data dir, through the better-sqlite3 driver adapter.
import Database from "better-sqlite3";
import { PrismaBetterSQLite3 } from "@prisma/adapter-better-sqlite3";
import { PrismaClient } from "./generated/client";
import { migrate } from "./migrate";
import { startCheckpointer, type Checkpointer } from "./checkpointer";
import { sqliteRepos } from "./repos/sqlite";
import { SQLITE_RETENTION } from "./repos/retention-sqlite";
import type { Repos } from "./repos/types";

export type { PrismaClient };

export interface OpenedDb {
  prisma: PrismaClient;
  /** A direct connection to the same file for batched writes off the request path (audit
   * entries): through Prisma's JS engine each inserted row costs ~55 µs of CPU, here ~5 µs. */
  sqlite: Database.Database;
  file: string;
  /** The batched writes of shared state (audit, counters and rate state, resources) in this
   * store's SQL: SQLite's here, PostgreSQL's in a PostgreSQL store (engines/store/open.ts). */
  repos: Repos;
  /** While a background checkpoint runs: a promise to hold direct writes on (prisma/checkpointer.ts). */
  writesPaused(): Promise<void> | undefined;
  /** set when replicas share a PostgreSQL store (engines/store/open.ts): its URL */
  postgresUrl?: string;
  close(): Promise<void>;
}

const WAL_SIZE_LIMIT = 16 * 1024 * 1024;

/** Migrate (offline, in-process) and open the store at `file`. A server keeps checkpoints off
 * its event loop (prisma/checkpointer.ts), started on first use with `lazy`; a short CLI command
 * does not need the thread. */
export async function openDb(file: string, opts: { warn?: (msg: string) => void; backgroundCheckpoints?: boolean; lazy?: boolean } = {}): Promise<OpenedDb> {
  migrate(file);
  const adapter = new PrismaBetterSQLite3({ url: `file:${file}` });
  const prisma = new PrismaClient({ adapter });
  await prisma.$connect();
  // WAL lets the CLI read while the server writes; busy_timeout avoids SQLITE_BUSY between processes.
  await prisma.$queryRawUnsafe("PRAGMA journal_mode = WAL");
  await prisma.$executeRawUnsafe("PRAGMA busy_timeout = 5000");
  const sqlite = new Database(file);
  sqlite.pragma("journal_mode = WAL");
  sqlite.pragma("busy_timeout = 5000");
  sqlite.pragma("synchronous = NORMAL"); // WAL + NORMAL: durable across a process crash, commits without fsync
  sqlite.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT}`); // a WAL that started over is cut back to this
  const begin = () =>
    startCheckpointer(
      file,
      async (pages) => {
        if (sqlite.open) sqlite.pragma(`wal_autocheckpoint = ${pages}`);
        await prisma.$queryRawUnsafe(`PRAGMA wal_autocheckpoint = ${pages}`);
      },
      opts.warn ?? ((m) => console.error(m)),
      { retention: SQLITE_RETENTION },
    );
  // `lazy` (a server): the thread starts with the first direct write (writers ask writesPaused
  // before each batch) or retention batch, not with the store: an idle server keeps no thread,
  // and until then SQLite's automatic checkpoints keep the WAL bounded
  let checkpointer: Checkpointer | null | undefined = opts.backgroundCheckpoints === false ? null : opts.lazy ? undefined : await begin();
  let starting: Promise<Checkpointer | null> | undefined;
  let closed = false;
  const started = () => (starting ??= begin().then(async (c) => (closed ? (await c?.stop(), null) : (checkpointer = c))));
  const pruneOffThread = {
    run: async (cutoff: string, batch: number) => {
      const c = checkpointer ?? (await started());
      if (!c) throw new Error("the store's background thread is unavailable");
      return c.prune(cutoff, batch);
    },
    available: () => (checkpointer === undefined ? !closed : checkpointer?.canPrune() === true),
  };
  return {
    prisma,
    sqlite,
    file,
    // audit retention batches run on a background thread of their own while the checkpoint thread runs
    repos: sqliteRepos(prisma, sqlite, checkpointer !== null ? { pruneOffThread } : {}),
    writesPaused: () => {
      if (checkpointer === undefined && !closed) void started();
      return checkpointer?.writesPaused();
    },
    close: async () => {
      closed = true;
      if (starting) await starting;
      await checkpointer?.stop();
      await prisma.$disconnect();
      if (sqlite.open) sqlite.close();
    },
  };
}
