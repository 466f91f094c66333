// The offline `svc` command (no server answers on this machine) on a scale-out deployment: with
// SVC_DATABASE_URL set, `svc status`, `svc config export`, `svc config apply` and `svc doctor` work
// on the PostgreSQL store the replicas share, not on an empty local SQLite file; a bad or
// unreachable URL is one clear line (no stack, no password).
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import path from "node:path";
import { writeFile } from "node:fs/promises";
import { missingServices, DEAD_PORT } from "../helpers/services";
import { runCli } from "../helpers/cli";
import { tempDir } from "../helpers/svc";
import { startShared, startReplica, type Shared, type Replica } from "./cluster";
import { until } from "../helpers/http";

const missing = missingServices();
if (missing) console.warn(`test/scale skipped: ${missing}`);

describe.skipIf(!!missing)("offline svc command on the PostgreSQL store", () => {
  let shared: Shared;
  let replica: Replica;
  let env: Record<string, string>;
  let home: string;
  let keyId: string;
  let saved: string | undefined;

  beforeAll(async () => {
    shared = await startShared();
    // no periodic re-read: only the CLI's broadcast can tell the replica about its writes
    saved = process.env.SVC_STORE_RELOAD_MS;
    process.env.SVC_STORE_RELOAD_MS = "0";
    replica = await startReplica();
    // a replica wrote: a key over HTTP and an Agent from a manifest source
    const k = await replica.api("POST", "/v1/api-keys", { name: "from-replica" });
    expect(k.status).toBe(201);
    keyId = k.json.id;
    await replica.svc.svc.store.write([{ op: "upsert", kind: "Agent", name: "pg-agent", owner: "config:default", spec: { instructions: "written by a replica" } }]);
    // the CLI runs elsewhere: its own empty data dir, nothing listening on its port
    home = await tempDir("svc-offline-pg-");
    env = { SVC_HOME: home, SVC_PORT: String(DEAD_PORT), SVC_DATABASE_URL: shared.pg.url };
  }, 120_000);

  afterAll(async () => {
    await replica?.svc.stop().catch(() => undefined);
    if (saved === undefined) delete process.env.SVC_STORE_RELOAD_MS;
    else process.env.SVC_STORE_RELOAD_MS = saved;
    await shared?.stop();
  });

  it("svc status reads the objects the replica wrote", async () => {
    const r = await runCli(["status", "--json"], env);
    expect(r.code, r.stderr).toBe(0);
    const snap = JSON.parse(r.stdout);
    expect(snap.online).toBe(false);
    const names = snap.objects.map((o: any) => `${o.kind}/${o.name}`);
    expect(names).toContain("Agent/pg-agent");
    expect(names).toContain(`ApiKey/${keyId}`);
    const text = await runCli(["status"], env);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/working on the PostgreSQL store postgresql:\/\/svc@localhost\/postgres \(SVC_DATABASE_URL\)/);
    expect(text.stdout).toMatch(/Agent\/pg-agent/);
  });

  it("svc config export and apply work on it; the running replica is told at once (SVC_REDIS_URL)", async () => {
    const exp = await runCli(["config", "export", "--include-api-owned"], env);
    expect(exp.code, exp.stderr).toBe(0);
    expect(exp.stdout).toContain("name: pg-agent");
    expect(exp.stdout).toContain("written by a replica");
    expect(exp.stdout).toContain(keyId);

    const file = path.join(home, "agent.yaml");
    await writeFile(file, "apiVersion: svc/v1\nkind: Agent\nmetadata:\n  name: from-cli\nspec:\n  instructions: applied offline\n");
    const apply = await runCli(["config", "apply", file], env);
    expect(apply.code, apply.stderr).toBe(0);
    expect(apply.stdout).toMatch(/Applied 1 change/);
    await until(() => !!replica.svc.svc.store.get("Agent", "from-cli"), 10_000);
    expect(replica.svc.svc.store.get("Agent", "from-cli")?.spec).toMatchObject({ instructions: "applied offline" });
    // nothing went to the local SQLite file's objects
    const local = await runCli(["status", "--json"], { ...env, SVC_DATABASE_URL: "" });
    expect(JSON.parse(local.stdout).objects.map((o: any) => o.name)).not.toContain("from-cli");
  });

  it("svc doctor checks the PostgreSQL store", async () => {
    const r = await runCli(["doctor"], env);
    expect(r.stdout).toMatch(/PostgreSQL store postgresql:\/\/svc@localhost\/postgres answers and is migrated/);
  });

  it("an unreachable or malformed SVC_DATABASE_URL is one clear line, without the password", async () => {
    const bad = { ...env, SVC_DATABASE_URL: `postgresql://svc:hunter2@127.0.0.1:${DEAD_PORT}/svc` };
    for (const args of [["status"], ["config", "export"]]) {
      const r = await runCli(args, bad);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`cannot use the PostgreSQL store postgresql://svc:***@127.0.0.1:${DEAD_PORT}/svc (SVC_DATABASE_URL): `);
      expect(r.stderr).toMatch(/ECONNREFUSED/);
      expect(r.stderr).not.toContain("hunter2");
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(r.stderr.trim().split("\n").filter((l) => l.startsWith("svc:"))).toHaveLength(1);
    }
    const scheme = await runCli(["status"], { ...env, SVC_DATABASE_URL: "mysql://svc@127.0.0.1/svc" });
    expect(scheme.code).toBe(1);
    expect(scheme.stderr).toMatch(/^svc: SVC_DATABASE_URL must be a postgres:\/\/ or postgresql:\/\/ URL/m);
    const doctor = await runCli(["doctor"], bad);
    expect(doctor.code).toBe(1);
    expect(doctor.stdout).toContain(`PostgreSQL store postgresql://svc:***@127.0.0.1:${DEAD_PORT}/svc (SVC_DATABASE_URL) cannot be reached`);
    expect(doctor.stdout + doctor.stderr).not.toContain("hunter2");
  });
});
