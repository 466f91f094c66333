// Prisma 6.19 with the JS engine and a driver adapter: no native engine download (docs/architecture.md, "Controllers and the store").
import path from "node:path";
import { defineConfig } from "prisma/config";
import { PrismaBetterSQLite3 } from "@prisma/adapter-better-sqlite3";

// The CLI (migrate diff/deploy) only needs a database URL when it touches a database.
const url = process.env.SVC_DATABASE_URL ?? `file:${path.resolve(".svc-dev.db")}`;

export default defineConfig({
  experimental: { adapter: true },
  engine: "js",
  schema: "prisma/schema.prisma",
  migrations: { path: "prisma/migrations" },
  adapter: async () => new PrismaBetterSQLite3({ url }),
});
