// The audit log's metadata.workflow_id / metadata.user_id filters match the value exactly, as the
// usage report does: not case-insensitively, and with no LIKE wildcards (`%`, `_`) in the value
// (SQLite's LIKE, which a Prisma `contains` becomes, is both). Paging stays exact too.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AuditLog } from "../../engines/gateway/audit/log";
import type { AuditRecord } from "../../engines/gateway/key-types";
import { usageDbOf, usageReport } from "../../engines/gateway/usage-report";
import { tempDb } from "./helpers";

type Db = Awaited<ReturnType<typeof tempDb>>;

const T0 = Date.UTC(2026, 10, 22, 10, 0, 0);
function rec(i: number, metadata: Record<string, unknown>): AuditRecord {
  return {
    timestamp: new Date(T0 + i * 1000),
    apiKeyId: "key_a",
    apiKeyName: "Key A",
    organizationId: "org1",
    requestId: `req_${i}`,
    action: "chat.completions",
    model: "tiny",
    provider: "local",
    status: "success",
    latencyMs: 5,
    promptTokens: 1,
    completionTokens: 1,
    costMicros: 10n,
    metadata,
  };
}

describe("audit log metadata filters", () => {
  let db: Db;
  let log: AuditLog;
  beforeEach(async () => {
    db = await tempDb();
    log = new AuditLog(db.prisma, db.repos.audit, { log: () => {} });
  });
  afterEach(async () => {
    await log.close();
    await db.cleanup();
  });

  const ids = async (f: Parameters<AuditLog["query"]>[0]) => (await log.query({ limit: 1000, ...f })).data.map((e) => e.request_id).sort();

  it("match exactly: other case and LIKE wildcards are other values", async () => {
    log.record(rec(0, { workflow_id: "wf-1" }));
    log.record(rec(1, { workflow_id: "WF-1" }));
    log.record(rec(2, { workflow_id: "wfx1" }));
    log.record(rec(3, { workflow_id: "wf_1" }));
    log.record(rec(4, { user_id: "alice" }));
    log.record(rec(5, { user_id: "ALICE" }));
    log.record(rec(6, { user_id: "al%" }));
    log.record(rec(7, { user_id: "bob" }));

    expect(await ids({ workflowId: "wf-1" })).toEqual(["req_0"]);
    expect(await ids({ workflowId: "WF-1" })).toEqual(["req_1"]);
    expect(await ids({ workflowId: "wf_1" })).toEqual(["req_3"]);
    expect(await ids({ workflowId: "wf%" })).toEqual([]);
    expect(await ids({ userId: "alice" })).toEqual(["req_4"]);
    expect(await ids({ userId: "al%" })).toEqual(["req_6"]);
    expect(await ids({ userId: "%" })).toEqual([]);
    expect(await ids({ userId: "_ob" })).toEqual([]);
  });

  it("agree with the usage report's count for the same value", async () => {
    for (let i = 0; i < 6; i++) log.record(rec(i, { workflow_id: i % 2 ? "Build" : "build" }));
    await log.flush();
    const [row] = await usageReport(usageDbOf(db), { groupBy: [], workflowId: "build" });
    expect(row.requests).toBe(3);
    expect((await ids({ workflowId: "build" })).length).toBe(row.requests);
  });

  it("pages over exact matches only, each once, when look-alikes sit between them", async () => {
    // 40 entries: every fourth is "u1", the rest "U1" (same letters, other case)
    for (let i = 0; i < 40; i++) log.record(rec(i, { user_id: i % 4 === 0 ? "u1" : "U1" }));
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < 20; pages++) {
      const page = await log.query({ userId: "u1", limit: 3, cursor });
      expect(page.data.length).toBeLessThanOrEqual(3);
      seen.push(...page.data.map((e) => e.request_id));
      if (!page.more) {
        expect(page.cursor).toBeNull();
        break;
      }
      expect(page.data).toHaveLength(3); // a page that says more follow is full
      cursor = page.cursor!;
    }
    const want = Array.from({ length: 10 }, (_, k) => `req_${36 - k * 4}`);
    expect(seen).toEqual(want); // newest first, each once
  });
});
