// Which store a server opens (docs/architecture.md "Controllers and the store"): the embedded SQLite file in the data dir by
// default; PostgreSQL when SVC_DATABASE_URL is a postgres:// or postgresql:// URL (several
// replicas share it). In PostgreSQL mode the shared state (objects, counters, rate state, audit,
// webhooks, alert marks) goes to PostgreSQL through the @prisma/adapter-pg client; the data dir
// keeps a local SQLite file only for what is local to one replica: the write-ahead journal of
// audit rows (prisma/repos/audit-journal.ts). Memory opens its own pool (engines/memory/pg).
// `repos` carries the store's batched writes in the opened database's own SQL (prisma/repos).
import { openDb, type OpenedDb } from "../../prisma/client";
import type { PrismaClient } from "../../prisma/client";
import { storeFile } from "../paths";

export interface StoreDb extends OpenedDb {
  /** set in PostgreSQL mode: this replica's own SQLite store (its `sqlite` handle is this one's) */
  local?: OpenedDb;
}

export function postgresUrlOf(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const u = env.SVC_DATABASE_URL?.trim();
  if (!u) return undefined;
  if (/^postgres(ql)?:\/\//i.test(u)) return u;
  throw new Error(`SVC_DATABASE_URL must be a postgres:// or postgresql:// URL (got a URL of another scheme); unset it for the embedded SQLite store`);
}

export async function openStore(home: string, opts: { warn?: (m: string) => void; env?: NodeJS.ProcessEnv; backgroundCheckpoints?: boolean } = {}): Promise<StoreDb> {
  const url = postgresUrlOf(opts.env);
  const local = await openDb(storeFile(home), { warn: opts.warn, backgroundCheckpoints: opts.backgroundCheckpoints, lazy: true }); // the store thread starts with the first write
  if (!url) return local;
  try {
    // PostgreSQL's code (pg and the repositories) loads only in PostgreSQL mode
    const [{ migratePg }, { postgresRepos }, { journaledAudit, recoverJournal }, { storePool }] = await Promise.all([
      import("./pg-migrate"),
      import("../../prisma/repos/postgres"),
      import("../../prisma/repos/audit-journal"),
      import("./pg-pool"),
    ]);
    await migratePg(url);
    const { PrismaPg } = await import("@prisma/adapter-pg");
    const { PrismaClient: PgClient } = await import("../../prisma/generated-pg/client");
    const store = storePool(url);
    const client = new PgClient({ adapter: new PrismaPg(store.pool, { disposeExternalPool: true }) });
    await client.$connect();
    // Same models and fields (prisma/postgres/derive.mjs), so the SQLite client's type fits its
    // model queries; raw SQL is the repositories' business (prisma/repos/postgres.ts).
    const prisma = client as unknown as PrismaClient;
    const repos = postgresRepos(client, store.pool);
    const journal = local.repos.audit.sync;
    if (journal) {
      // audit rows are written ahead on this replica's own file (prisma/repos/audit-journal.ts)
      const n = await recoverJournal(repos.audit, journal);
      if (n) opts.warn?.(`audit: ${n} entries a previous process had answered but not yet stored moved to PostgreSQL`);
      repos.audit = journaledAudit(repos.audit, journal);
    }
    return {
      ...local,
      prisma,
      repos,
      postgresUrl: url,
      local,
      close: async () => {
        await store.close((m) => (opts.warn ?? console.error)(m), () => client.$disconnect());
        await local.close();
      },
    };
  } catch (e) {
    await local.close().catch(() => undefined);
    throw e;
  }
}
