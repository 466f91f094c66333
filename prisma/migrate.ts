// Applies the committed migrations at start-up, offline and in-process (no Prisma CLI spawn),
// recording them in Prisma's own `_prisma_migrations` table so `prisma migrate deploy` agrees.
import { createHash, randomUUID } from "node:crypto";
import { readdirSync, readFileSync, existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";

export const migrationsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), "migrations");

const tableSql = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
  "id" TEXT PRIMARY KEY NOT NULL, "checksum" TEXT NOT NULL, "finished_at" DATETIME,
  "migration_name" TEXT NOT NULL, "logs" TEXT, "rolled_back_at" DATETIME,
  "started_at" DATETIME NOT NULL DEFAULT current_timestamp,
  "applied_steps_count" INTEGER UNSIGNED NOT NULL DEFAULT 0)`;

export function listMigrations(): string[] {
  return readdirSync(migrationsDir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(path.join(migrationsDir, d.name, "migration.sql")))
    .map((d) => d.name)
    .sort();
}

/** Names of committed migrations not yet applied to the database file. */
export function pendingMigrations(dbFile: string): string[] {
  if (!existsSync(dbFile)) return listMigrations();
  const db = new Database(dbFile, { readonly: true });
  try {
    const has = db.prepare(`SELECT 1 FROM sqlite_master WHERE type='table' AND name='_prisma_migrations'`).get();
    const done = new Set<string>(
      has ? db.prepare(`SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL`).all().map((r: any) => r.migration_name) : [],
    );
    return listMigrations().filter((m) => !done.has(m));
  } finally {
    db.close();
  }
}

/** Apply every pending migration, each in its own transaction. Returns the names applied. */
export function migrate(dbFile: string): string[] {
  const db = new Database(dbFile);
  try {
    db.pragma("journal_mode = WAL");
    db.exec(tableSql);
    const done = new Set<string>(
      db.prepare(`SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL`).all().map((r: any) => r.migration_name),
    );
    const applied: string[] = [];
    for (const name of listMigrations()) {
      if (done.has(name)) continue;
      const sql = readFileSync(path.join(migrationsDir, name, "migration.sql"), "utf8");
      const checksum = createHash("sha256").update(sql).digest("hex");
      db.transaction(() => {
        db.exec(sql);
        const now = new Date().toISOString();
        db.prepare(
          `INSERT INTO _prisma_migrations (id, checksum, finished_at, migration_name, started_at, applied_steps_count) VALUES (?, ?, ?, ?, ?, 1)`,
        ).run(randomUUID(), checksum, now, name, now);
      })();
      applied.push(name);
    }
    return applied;
  } finally {
    db.close();
  }
}
