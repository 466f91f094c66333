// The Prisma client factory: one SQLite file in the data dir, through the better-sqlite3 driver adapter.
import { PrismaBetterSQLite3 } from "@prisma/adapter-better-sqlite3";
import { PrismaClient } from "./generated/client";
import { migrate } from "./migrate";

export type { PrismaClient };

export interface OpenedDb {
  prisma: PrismaClient;
  file: string;
  close(): Promise<void>;
}

/** Migrate (offline, in-process) and open the store at `file`. */
export async function openDb(file: string): Promise<OpenedDb> {
  migrate(file);
  const adapter = new PrismaBetterSQLite3({ url: `file:${file}` });
  const prisma = new PrismaClient({ adapter });
  await prisma.$connect();
  // WAL lets the CLI read while the server writes; busy_timeout avoids SQLITE_BUSY between processes.
  await prisma.$queryRawUnsafe("PRAGMA journal_mode = WAL");
  await prisma.$executeRawUnsafe("PRAGMA busy_timeout = 5000");
  return { prisma, file, close: () => prisma.$disconnect() };
}
