// Tests run real things (server on an ephemeral port, SQLite in a temp dir); 2 cores here.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    environment: "node",
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    poolOptions: { forks: { minForks: 1, maxForks: 2 } },
    reporters: ["default", "json"],
    outputFile: { json: ".vitest-report.json" },
  },
});
