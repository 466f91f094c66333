import { until } from "../helpers/http";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { httpView } from "../helpers/errors";
import { AuditLog } from "../../engines/gateway/audit/log";
import type { AuditRecord } from "../../engines/gateway/key-types";
import type { AuditRepo } from "../../prisma/repos/types";
import { tempDb } from "./helpers";

type Db = Awaited<ReturnType<typeof tempDb>>;

function rec(i: number, over: Partial<AuditRecord> = {}): AuditRecord {
  return {
    timestamp: new Date(Date.UTC(2026, 10, 22, 10, 0, 0) + Math.floor(i / 3) * 1000), // 3 entries share each second
    apiKeyId: "key_a",
    apiKeyName: "Key A",
    organizationId: "org1",
    requestId: `req_${i}`,
    action: i % 2 ? "chat.completions" : "chat.stream",
    model: "tiny",
    provider: "local",
    status: i % 5 === 0 ? "rate_limit_exceeded" : "success",
    latencyMs: 12.4,
    promptTokens: 10,
    completionTokens: 5,
    costMicros: 1500n,
    metadata: { workflow_id: "wf", i },
    ipAddress: "127.0.0.1",
    userAgent: "test",
    ...over,
  };
}

describe("AuditLog", () => {
  let db: Db;
  beforeEach(async () => {
    db = await tempDb();
  });
  afterEach(async () => {
    await db.cleanup();
  });

  it("writes 5,000 records in batches and loses nothing recorded right before close()", async () => {
    const log = new AuditLog(db.prisma, db.repos.audit, { flushMs: 50, maxBatch: 500, log: () => {} });
    for (let i = 0; i < 4990; i++) log.record(rec(i));
    // Let some background flushes start, then record more while they are in flight.
    await new Promise((r) => setImmediate(r));
    for (let i = 4990; i < 5000; i++) log.record(rec(i));
    await log.close(); // what SIGTERM handling calls
    expect(await db.prisma.auditEntry.count()).toBe(5000);
    const ids = new Set((await db.prisma.auditEntry.findMany({ select: { requestId: true } })).map((r) => r.requestId));
    expect(ids.size).toBe(5000);
    expect(ids.has("req_4999")).toBe(true);
  });

  it("a full batch is written at once, without waiting for the flush timer (direct SQLite handle)", async () => {
    const log = new AuditLog(db.prisma, db.repos.audit, { flushMs: 60_000, log: () => {} });
    const count = () => (db.sqlite.prepare('SELECT count(*) AS n FROM "AuditEntry"').get() as { n: number }).n;
    for (let i = 0; i < 63; i++) log.record(rec(i));
    await new Promise((r) => setTimeout(r, 50));
    expect(count()).toBe(0); // under a batch: waits for the timer (or close)
    log.record(rec(63));
    // written long before the 60 s timer: polled, not slept
    await until(() => count() === 64, 10_000);
    expect(count()).toBe(64);
    for (let i = 64; i < 70; i++) log.record(rec(i));
    await log.close();
    expect(count()).toBe(70);
  });

  it("a failed write is re-queued and written by the next flush", async () => {
    let fail = true;
    // The store's repository without its synchronous side (the asynchronous path PostgreSQL
    // takes), whose first write fails as a locked database would.
    const flaky: AuditRepo = {
      insert(rows) {
        if (!fail) return db.repos.audit.insert(rows);
        fail = false;
        return Promise.reject(new Error("SQLITE_BUSY: database is locked"));
      },
    };
    const logs: string[] = [];
    const log = new AuditLog(db.prisma, flaky, { log: (m) => logs.push(m) });
    for (let i = 0; i < 10; i++) log.record(rec(i));
    await expect(log.flush()).rejects.toThrow(/locked/);
    expect(log.pending).toBe(10);
    log.record(rec(10));
    await log.close();
    expect(await db.prisma.auditEntry.count()).toBe(11);
    expect(logs[0]).toMatch(/will retry/);
  });

  it("a record after close() is still written", async () => {
    const log = new AuditLog(db.prisma, db.repos.audit, { log: () => {} });
    await log.close();
    log.record(rec(1));
    await log.flush();
    expect(await db.prisma.auditEntry.count()).toBe(1);
  });

  it("renders the spec's fields and reads its own writes", async () => {
    const log = new AuditLog(db.prisma, db.repos.audit, { log: () => {} });
    log.record(rec(1));
    log.record(rec(5));
    const page = await log.query({ keyIds: ["key_a"] });
    expect(page.data).toHaveLength(2);
    const ok = page.data.find((e) => e.request_id === "req_1")!;
    expect(ok).toEqual({
      timestamp: "2026-11-22T10:00:00.000Z",
      api_key_id: "key_a",
      api_key_name: "Key A",
      request_id: "req_1",
      action: "chat.completions",
      model: "tiny",
      provider: "local",
      status: "success",
      latency_ms: 12,
      tokens: { prompt: 10, completion: 5, total: 15 },
      cost_usd: 0.0015,
      metadata: { workflow_id: "wf", i: 1 },
      ip_address: "127.0.0.1",
      user_agent: "test",
    });
    const failed = page.data.find((e) => e.request_id === "req_5")!;
    expect(failed.status).toBe("rate_limit_exceeded");
    expect(failed.error_code).toBe("rate_limit_exceeded");
    await log.close();
  });

  it("cursor pagination covers every entry exactly once, newest first, while new entries arrive", async () => {
    const log = new AuditLog(db.prisma, db.repos.audit, { log: () => {} });
    for (let i = 0; i < 250; i++) log.record(rec(i));
    log.record(rec(999, { apiKeyId: "key_b" })); // another key's entry is never returned
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    for (;;) {
      const page = await log.query({ keyIds: ["key_a"], limit: 30, cursor });
      pages++;
      seen.push(...page.data.map((e) => e.request_id));
      // newer entries recorded mid-way sort before the cursor and do not disturb later pages
      if (pages === 2) log.record(rec(0, { requestId: "late", timestamp: new Date("2026-11-23T00:00:00Z") }));
      if (!page.more) {
        expect(page.cursor).toBeNull();
        break;
      }
      cursor = page.cursor!;
    }
    expect(pages).toBe(9);
    expect(seen).toHaveLength(250);
    expect(new Set(seen).size).toBe(250);
    // newest first; within one second, later records first
    expect(seen[0]).toBe("req_249");
    expect(seen[249]).toBe("req_0");
    await log.close();
  });

  it("filters by since/until, action (exact or dotted prefix), status, organization", async () => {
    const log = new AuditLog(db.prisma, db.repos.audit, { log: () => {} });
    for (let i = 0; i < 30; i++) log.record(rec(i)); // timestamps 10:00:00 .. 10:00:09
    log.record(rec(100, { apiKeyId: "key_c", organizationId: "org2", action: "keys.create" }));
    const all = (f: Parameters<AuditLog["query"]>[0]) => log.query({ limit: 1000, ...f }).then((p) => p.data);

    const window = await all({ keyIds: ["key_a"], since: new Date("2026-11-22T10:00:02Z"), until: new Date("2026-11-22T10:00:04Z") });
    expect(window.map((e) => e.request_id).sort()).toEqual(["req_6", "req_7", "req_8", "req_9", "req_10", "req_11", "req_12", "req_13", "req_14"].sort());

    expect((await all({ keyIds: ["key_a"], action: "chat.completions" })).length).toBe(15);
    expect((await all({ keyIds: ["key_a"], action: "chat" })).length).toBe(30);
    expect((await all({ keyIds: ["key_a"], action: "cha" })).length).toBe(0);
    expect((await all({ keyIds: ["key_a"], status: "success" })).length).toBe(24);
    expect((await all({ keyIds: ["key_a"], status: "rate_limit_exceeded" })).length).toBe(6);
    expect((await all({ keyIds: ["key_a"], status: "error" })).length).toBe(6);
    expect((await all({ organizationId: "org2" })).map((e) => e.request_id)).toEqual(["req_100"]);
    await expect(log.query({ cursor: "not-a-cursor" }).catch(httpView)).resolves.toMatchObject({ status: 400, code: "invalid_request" });
    await log.close();
  });
});
