// Applies prisma/postgres/migrations at start-up, the way prisma/migrate.ts does for SQLite:
// in-process, each migration in its own transaction, recorded in `_prisma_migrations` so
// `prisma migrate deploy --schema prisma/postgres/schema.prisma` agrees. Replicas starting
// together take a session advisory lock first, so exactly one applies each migration.
import { createHash, randomUUID } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";

export const pgMigrationsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "prisma", "postgres", "migrations");
const MIGRATE_LOCK = 7_310_001; // advisory lock id (engines/cluster/lease.ts 7_310_002, prisma/repos/retention-postgres.ts 7_310_100)

const tableSql = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
  "id" VARCHAR(36) PRIMARY KEY NOT NULL, "checksum" VARCHAR(64) NOT NULL, "finished_at" TIMESTAMPTZ,
  "migration_name" VARCHAR(255) NOT NULL, "logs" TEXT, "rolled_back_at" TIMESTAMPTZ,
  "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(), "applied_steps_count" INTEGER NOT NULL DEFAULT 0)`;

export function listPgMigrations(): string[] {
  return readdirSync(pgMigrationsDir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(path.join(pgMigrationsDir, d.name, "migration.sql")))
    .map((d) => d.name)
    .sort();
}

export async function migratePg(url: string): Promise<string[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query("SELECT pg_advisory_lock($1)", [MIGRATE_LOCK]);
    await c.query(tableSql);
    const done = new Set((await c.query(`SELECT migration_name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL`)).rows.map((r) => r.migration_name as string));
    const applied: string[] = [];
    for (const name of listPgMigrations()) {
      if (done.has(name)) continue;
      const sql = readFileSync(path.join(pgMigrationsDir, name, "migration.sql"), "utf8");
      const checksum = createHash("sha256").update(sql).digest("hex");
      await c.query("BEGIN");
      try {
        await c.query(sql);
        await c.query(
          `INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, started_at, applied_steps_count) VALUES ($1, $2, now(), $3, now(), 1)`,
          [randomUUID(), checksum, name],
        );
        await c.query("COMMIT");
      } catch (e) {
        await c.query("ROLLBACK").catch(() => undefined);
        throw new Error(`PostgreSQL migration ${name} failed: ${(e as Error).message}`);
      }
      applied.push(name);
    }
    return applied;
  } finally {
    await c.query("SELECT pg_advisory_unlock($1)", [MIGRATE_LOCK]).catch(() => undefined);
    await c.end().catch(() => undefined);
  }
}
