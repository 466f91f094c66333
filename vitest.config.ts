// Tests run real things (server on an ephemeral port, SQLite in a temp dir); 2 cores here.
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { defineConfig } from "vitest/config";

// Every run has a SVC_TEST_ROOT (a fresh temp dir when the caller gave none): test data stays
// under it, and svc's outbound guard (engines/net/outbound-guard.ts) is on for the whole run.
process.env.SVC_TEST_ROOT ||= mkdtempSync(path.join(os.tmpdir(), "svc-test-"));

export default defineConfig({
  test: {
    environment: "node",
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/startup/global-setup.ts"], // dist/ rebuilt when stale (bin/svc.mjs runs it)
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    poolOptions: { forks: { minForks: 1, maxForks: 2 } },
    reporters: ["default", "json"],
    outputFile: { json: ".vitest-report.json" },
  },
});
