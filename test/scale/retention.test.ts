// Audit retention on SQLite and on PostgreSQL: entries older than the Server's retentionDays are
// pruned in batches while requests are served (every request answered), the per-key/model/day
// roll-ups of the pruned entries equal their totals, newer entries stay, and `svc doctor` reports
// the store's size and its oldest entry. With retentionArchiveDir, every pruned entry is in the
// day's JSON Lines file first, and a batch the archive cannot write stays in the store.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import path from "node:path";
import { readdir, readFile, writeFile } from "node:fs/promises";
import OpenAI from "openai";
import { missingServices } from "../helpers/services";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";
import { runCli } from "../helpers/cli";
import { until } from "../helpers/http";
import { provider, standIn, type StandIn } from "../gateway/fixtures";
import { startShared, type Shared } from "./cluster";
import { clusterOf } from "../../engines/cluster";
import type { AuditRow } from "../../prisma/repos/types";

const missing = missingServices();
if (missing) console.warn(`test/scale (PostgreSQL part) skipped: ${missing}`);

const DAY = 86_400_000;
const now = Date.now();
const keys = ["key_a", null];
const models = ["gpt-x", "other"];

/** 1,300 entries 100-102 days old (several batches) and 40 from yesterday. */
function rows(): { old: AuditRow[]; recent: AuditRow[] } {
  const make = (i: number, at: number): AuditRow => {
    const k = keys[i % 2];
    const ok = i % 7 !== 0;
    return [`old_${at}_${i}`, new Date(at).toISOString().replace("Z", "+00:00"), k, k ? "a" : null, null, `req_${i}`, "chat.completions", models[i % 3 === 0 ? 1 : 0], "up",
      ok ? "success" : "rate_limit_exceeded", ok ? null : "rate_limit_exceeded", 5, ok ? 10 : 0, ok ? 4 : 0, ok ? 14 : 0, ok ? 1000 + i : 0, "{}", "127.0.0.1", null, null];
  };
  const old = Array.from({ length: 1300 }, (_, i) => make(i, now - (100 + (i % 3)) * DAY - i * 1000));
  const recent = Array.from({ length: 40 }, (_, i) => make(i, now - DAY + i * 1000)).map((r) => ((r[0] = `new_${r[0]}`), r));
  return { old, recent };
}

/** what the roll-ups should hold: the old rows' totals per key, model and day */
function expected(old: AuditRow[]) {
  const m = new Map<string, { requests: number; errors: number; promptTokens: number; completionTokens: number; costMicros: number }>();
  for (const r of old) {
    const k = `${r[2] ?? ""}|${r[7] ?? ""}|${String(r[1]).slice(0, 10)}`;
    const v = m.get(k) ?? { requests: 0, errors: 0, promptTokens: 0, completionTokens: 0, costMicros: 0 };
    v.requests++;
    if (r[9] !== "success") v.errors++;
    v.promptTokens += Number(r[12]);
    v.completionTokens += Number(r[13]);
    v.costMicros += Number(r[15]);
    m.set(k, v);
  }
  return Object.fromEntries([...m].sort());
}

async function scenario(s: TestSvc, up: StandIn, env: Record<string, string>) {
  const svc = s.svc;
  await svc.store.write([
    { op: "upsert", kind: "Provider", name: "up", owner: "config:test", spec: provider("up", up, [{ name: "gpt-x", inputPerMillion: 1, outputPerMillion: 1 }]).spec },
    // the archive "directory" is a file at first: it cannot be written, so nothing may go
    { op: "upsert", kind: "Server", name: "main", owner: "config:test", spec: { retentionDays: 30, retentionArchiveDir: "blocked" } },
  ]);
  await writeFile(path.join(s.home, "blocked"), "not a directory");
  await until(() => svc.server.retentionDays === 30 && !!svc.store.get("Provider", "up"), 10_000);
  const { old, recent } = rows();
  await svc.db.repos.audit.insert([...old, ...recent]);
  await expect(clusterOf.get(svc)!.retention.run()).rejects.toThrow();
  expect(await svc.db.prisma.auditEntry.count({ where: { id: { startsWith: "old_" } } })).toBe(old.length);

  await svc.store.write([{ op: "upsert", kind: "Server", name: "main", owner: "config:test", spec: { retentionDays: 30, retentionArchiveDir: "audit-archive" } }]);
  await until(() => svc.server.retentionArchiveDir === "audit-archive", 10_000);
  const client = new OpenAI({ apiKey: "none", baseURL: `${s.url}/v1`, maxRetries: 0 });
  const load = Promise.all(Array.from({ length: 40 }, () => client.chat.completions.create({ model: "gpt-x", messages: [{ role: "user", content: "hi" }] })));
  const pruned = await clusterOf.get(svc)!.retention.run();
  const answered = await load;
  expect(answered).toHaveLength(40);
  expect(pruned).toBe(old.length);

  const p = svc.db.prisma;
  expect(await p.auditEntry.count({ where: { id: { startsWith: "old_" } } })).toBe(0);
  expect(await p.auditEntry.count({ where: { id: { startsWith: "new_" } } })).toBe(recent.length);
  const got = Object.fromEntries(
    (await p.usageDaily.findMany()).map((u) => [`${u.keyId}|${u.model}|${u.day}`, { requests: u.requests, errors: u.errors, promptTokens: Number(u.promptTokens), completionTokens: Number(u.completionTokens), costMicros: Number(u.costMicros) }]).sort(),
  );
  expect(got).toEqual(expected(old));
  // every pruned entry was archived once, in the file of its UTC day, with its fields
  const dir = path.join(s.home, "audit-archive");
  const files = (await readdir(dir)).sort();
  expect(files).toEqual([...new Set(old.map((r) => `audit-${String(r[1]).slice(0, 10)}.jsonl`))].sort());
  const archived = (await Promise.all(files.map((f) => readFile(path.join(dir, f), "utf8")))).flatMap((t) => t.trim().split("\n").map((l) => JSON.parse(l)));
  expect(archived.map((r) => r.id).sort()).toEqual(old.map((r) => r[0]).sort());
  const first = old[0];
  expect(archived.find((r) => r.id === first[0])).toMatchObject({
    timestamp: new Date(String(first[1])).toISOString(),
    apiKeyId: first[2],
    model: first[7],
    status: first[9],
    promptTokens: first[12],
    costMicros: first[15],
  });
  // a second run has nothing left to prune and changes no roll-up
  expect(await clusterOf.get(svc)!.retention.run()).toBe(0);

  const doc = await runCli(["doctor", "--home", s.home, "--port", String(s.port)], env);
  const line = doc.stdout.split("\n").find((l) => /audit entries, the oldest from/.test(l));
  expect(line, doc.stdout).toMatch(/\d+\.\d MB, [\d,]+ audit entries, the oldest from \d{4}-\d{2}-\d{2} \(1 day ago/);
}

describe("audit retention on SQLite", () => {
  let s: TestSvc;
  let up: StandIn;
  beforeAll(async () => {
    up = await standIn();
    s = await startTestSvc({ home: await tempDir("svc-retention-"), resyncMs: 0 });
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
    await up?.close();
  });

  it("prunes entries past retentionDays in batches under load, keeps their roll-ups, and doctor reports the store", async () => {
    await scenario(s, up, {});
  });
});

describe.skipIf(!!missing)("audit retention on PostgreSQL", () => {
  let shared: Shared;
  let s: TestSvc;
  let up: StandIn;
  beforeAll(async () => {
    up = await standIn();
    shared = await startShared();
    s = await startTestSvc({ home: await tempDir("svc-retention-pg-"), resyncMs: 0 });
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
    await shared?.stop();
    await up?.close();
  });

  it("prunes entries past retentionDays in batches under load, keeps their roll-ups, and doctor reports the store", async () => {
    await scenario(s, up, shared.env);
  });
});
