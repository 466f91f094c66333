// Memory at rest (issue 43): a gateway-only server keeps out what it does not use. Beside what
// lazy-loading.test.ts checks (node-llama-cpp, the MCP SDK), a single SQLite server loads neither
// PostgreSQL's client nor Redis's (nor, without a bedrock Provider, the AWS signer), and starts
// no store thread until there is a write: not at start, not at the first audit-retention run
// (5 s in) when nothing is past the cutoff. The first write (an admin key created, audited)
// starts the checkpoint thread. A loader hook
// (record-loads.mjs) writes the URL of every ES module the process loads, worker files included.
// Prisma's query compiler comes from the module that lets its base64 text go after one decode.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../helpers/cli";
import { until } from "../helpers/http";

const ADMIN = "sk-svc-footprinttestadminkey000000000000000000000";
const SHARED_ONLY = { pg: /\/node_modules\/pg\//, ioredis: /\/node_modules\/ioredis\//, "@prisma/adapter-pg": /\/node_modules\/@prisma\/adapter-pg\// };
const STORE_THREADS = /\/prisma\/(checkpoint|retention)-worker\.mjs$/;

describe("a gateway-only server at rest", () => {
  it("loads no PostgreSQL or Redis client and starts its store thread only with the first write", async () => {
    const dir = mkdtempSync(path.join(process.env.SVC_TEST_ROOT ?? os.tmpdir(), "svc-footprint-"));
    const file = path.join(dir, "loads.txt");
    const p = spawn(process.execPath, ["--import", path.join(repoRoot, "test/startup/record-loads.mjs"), path.join(repoRoot, "bin/svc.mjs"), "serve", "--port", "0", "--no-quickstart", "--config", "examples/gateway"], {
      cwd: repoRoot,
      env: { ...process.env, SVC_HOME: path.join(dir, "home"), SVC_ADMIN_KEY: ADMIN, SVC_RECORD_LOADS: file, SVC_DATABASE_URL: "", SVC_REDIS_URL: "" },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let err = "";
    p.stderr.on("data", (d) => (err += d));
    const loads = () => readFileSync(file, "utf8").split("\n").filter(Boolean);
    try {
      await until(() => /svc listening on/.test(err) || p.exitCode !== null, 60_000);
      const url = /svc listening on (http:\/\/\S+)/.exec(err)?.[1];
      expect(url, err).toBeTruthy();
      // past the first audit-retention run (5 s after start): nothing to prune, so no thread
      await new Promise((r) => setTimeout(r, 5500));
      expect(loads().some((u) => u.endsWith("/dist/boot/engines.js")), "the hook sees the server's modules").toBe(true);
      for (const [name, re] of Object.entries(SHARED_ONLY)) expect(loads().filter((u) => re.test(u)), name).toEqual([]);
      // no bedrock Provider here: the AWS signer and event-stream codec are not loaded
      expect(loads().filter((u) => /\/node_modules\/@(smithy|aws-crypto)\//.test(u))).toEqual([]);
      expect(loads().filter((u) => STORE_THREADS.test(u))).toEqual([]);
      // the query compiler's base64 module is required and dropped (prisma/query-compiler-wasm.ts),
      // not imported as an ES module, which would keep its 2.5 MB string for good
      expect(loads().some((u) => u.endsWith("/dist/prisma/query-compiler-wasm.js")), "the store loads its query compiler from there").toBe(true);
      expect(loads().filter((u) => /wasm-base64\.m?js$/.test(u))).toEqual([]);

      // a write: an admin-made key (stored, audited) starts the checkpoint thread
      const created = await fetch(`${url}/v1/api-keys`, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify({ name: "footprint" }) });
      expect(created.status).toBe(201);
      await until(() => loads().some((u) => u.endsWith("/prisma/checkpoint-worker.mjs")), 30_000);
      expect(loads().filter((u) => u.endsWith("/prisma/retention-worker.mjs")), "retention's thread waits for entries past the cutoff").toEqual([]);
    } finally {
      p.kill("SIGTERM");
      await new Promise((r) => p.exitCode !== null ? r(null) : p.on("close", r));
    }
  });
});
