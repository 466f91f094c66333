// The store's repositories (prisma/repos): one contract, run against the SQLite store and a
// throwaway PostgreSQL 15, each opened by the store opener (engines/store/open.ts) as a server
// opens it. What a repository writes is read back through the Prisma client's model queries, so
// a missing or wrong statement in either dialect fails here.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { openStore, type StoreDb } from "../../engines/store/open";
import { ResourceStore } from "../../prisma/resource-store";
import { AUDIT_COLUMNS, BATCH, type AuditRow, type ResourceRow } from "../../prisma/repos/types";
import { auditRow } from "../../engines/gateway/audit/rows";
import { missingServices, startPostgres, type Service } from "../helpers/services";
import { tempDir } from "../helpers/svc";

const missing = missingServices();
if (missing) console.warn(`test/scale/repos.test.ts: PostgreSQL part skipped: ${missing}`);

const T0 = Date.UTC(2026, 10, 22, 10, 0, 0);

function audit(i: number, over: Partial<Record<(typeof AUDIT_COLUMNS)[number], string | number | bigint | null>> = {}): AuditRow {
  const ts = new Date(T0 + i * 1000);
  const row = auditRow(
    {
      timestamp: ts, apiKeyId: "key_a", apiKeyName: "Key A", organizationId: "org1", requestId: `req_${i}`, action: "chat.completions",
      model: "m", provider: "p", status: i % 2 ? "success" : "budget_exceeded", latencyMs: 7, promptTokens: 3, completionTokens: 4,
      costMicros: 5_000_000_000n + BigInt(i), metadata: { i, text: "ünïcode 'quoted' \"too\"" }, ipAddress: "10.0.0.1", userAgent: "ua",
      traceId: "0af7651916cd43dd8448eb211c80319c",
    },
    `aud_${String(i).padStart(6, "0")}`,
    ts,
  );
  for (const [k, v] of Object.entries(over)) row[AUDIT_COLUMNS.indexOf(k as (typeof AUDIT_COLUMNS)[number])] = v;
  return row;
}

function resource(name: string, over: Partial<ResourceRow> = {}): ResourceRow {
  const at = new Date(T0).toISOString();
  return {
    kind: "ApiKey", name, uid: `uid-${name}`, owner: "api", labels: '{"team":"a"}', spec: JSON.stringify({ n: name }), generation: 1,
    status: "{}", revision: 1, deletedAt: null, createdAt: at, updatedAt: at, ...over,
  };
}

const stores: Array<{ name: string; skip: boolean; open(): Promise<{ db: StoreDb; stop(): Promise<void> }> }> = [
  {
    name: "SQLite",
    skip: false,
    async open() {
      const db = await openStore(await tempDir("svc-repos-"), { env: {}, backgroundCheckpoints: false });
      return { db, stop: () => db.close() };
    },
  },
  {
    name: "PostgreSQL",
    skip: !!missing,
    async open() {
      const pgs: Service = await startPostgres();
      try {
        const db = await openStore(await tempDir("svc-repos-"), { env: { SVC_DATABASE_URL: pgs.url }, backgroundCheckpoints: false });
        const stop = async () => {
          await db.close();
          await pgs.stop();
        };
        return { db, stop };
      } catch (e) {
        await pgs.stop();
        throw e;
      }
    },
  },
];

describe.each(stores)("$name repositories", (s) => {
  let db: StoreDb;
  let stop: () => Promise<void>;

  beforeAll(async () => {
    if (s.skip) return;
    ({ db, stop } = await s.open());
  }, 60_000);
  afterAll(async () => {
    await stop?.();
  });

  it.skipIf(s.skip)("the store opener picks this dialect's repositories", () => {
    expect(db.repos.dialect).toBe(s.name === "SQLite" ? "sqlite" : "postgresql");
    // only SQLite's direct handle writes synchronously (and in one transaction with the write-ahead log)
    expect(!!db.repos.audit.sync && !!db.repos.limits.sync).toBe(s.name === "SQLite");
  });

  it.skipIf(s.skip)("audit: a batch is inserted whole, every column read back as written; a failing batch leaves nothing", async () => {
    const n = BATCH.audit + 10; // more than one statement, one transaction (SQLite); one statement of arrays (PostgreSQL)
    await db.repos.audit.insert(Array.from({ length: n }, (_, i) => audit(i)));
    expect(await db.prisma.auditEntry.count()).toBe(n);
    const e = await db.prisma.auditEntry.findUniqueOrThrow({ where: { id: "aud_000003" } });
    expect(e).toEqual({
      id: "aud_000003", timestamp: new Date(T0 + 3000), apiKeyId: "key_a", apiKeyName: "Key A", organizationId: "org1",
      requestId: "req_3", action: "chat.completions", model: "m", provider: "p", status: "success", errorCode: null, latencyMs: 7,
      promptTokens: 3, completionTokens: 4, totalTokens: 7, costMicros: 5_000_000_003n, metadata: JSON.stringify({ i: 3, text: "ünïcode 'quoted' \"too\"" }),
      ipAddress: "10.0.0.1", userAgent: "ua", traceId: "0af7651916cd43dd8448eb211c80319c",
    });
    const nulls = await db.prisma.auditEntry.findUniqueOrThrow({ where: { id: "aud_000000" } });
    expect(nulls.errorCode).toBe("budget_exceeded");

    // the second chunk's first row lacks its request id: the first chunk must not stay either
    const bad = Array.from({ length: BATCH.audit + 1 }, (_, i) => audit(100_000 + i));
    bad[BATCH.audit][5] = null;
    await expect(db.repos.audit.insert(bad)).rejects.toThrow();
    expect(await db.prisma.auditEntry.count()).toBe(n);
    await db.repos.audit.insert([]);
  });

  it.skipIf(s.skip)("audit: a one-statement batch keeps every character (quotes, backslashes, braces, commas, the word NULL) and nulls; a replayed row is skipped", async () => {
    const tricky = ['a "quoted" \\ back\\slash', "{braces},{more}", "NULL", "", "line\nbreak\ttab", "ünïcode ☃ 'single'", "ends in a backslash \\", '"', "  spaces  ", "\\\""];
    const rows = tricky.map((t, i) => audit(200_000 + i, { userAgent: t, metadata: JSON.stringify({ t }), apiKeyName: i % 2 ? null : t, errorCode: i % 2 ? t : null }));
    await db.repos.audit.insert(rows);
    for (const [i, t] of tricky.entries()) {
      const e = await db.prisma.auditEntry.findUniqueOrThrow({ where: { id: `aud_${200_000 + i}` } });
      expect([e.userAgent, e.metadata, e.apiKeyName, e.errorCode, e.costMicros, e.timestamp]).toEqual([t, JSON.stringify({ t }), i % 2 ? null : t, i % 2 ? t : null, 5_000_000_000n + BigInt(200_000 + i), new Date(T0 + (200_000 + i) * 1000)]);
    }
    if (s.name !== "PostgreSQL") return;
    // on a shared store an insert skips rows already there (a write-ahead batch replayed)
    const before = await db.prisma.auditEntry.count();
    await db.repos.audit.insert([rows[0], audit(300_000)]);
    expect(await db.prisma.auditEntry.count()).toBe(before + 1);
  });

  it.skipIf(s.skip)("limits: counters are upserted (the second save replaces the values), rate state saved, deleted and loaded", async () => {
    const day = "day:2026-11-22";
    const month = "month:2026-11";
    const counters = (spend: number, x: number) => [
      { keyId: "key_l", period: day, spendMicros: spend, tokens: 10 * x, requests: x },
      { keyId: "key_l", period: month, spendMicros: spend, tokens: 20 * x, requests: 2 * x },
      { keyId: "key_l", period: "total", spendMicros: spend, tokens: 30 * x, requests: 3 * x },
      { keyId: "key_l", period: "day:2026-11-21", spendMicros: 1, tokens: 1, requests: 1 },
    ];
    await db.repos.limits.save({ counters: counters(1_000, 1), rates: [["key_l", '{"v":1}'], ["key_m", '{"v":2}']], gone: [] });
    // a budget beyond 32 bits of micro-USD, and many rows (several statements)
    const many = Array.from({ length: BATCH.counters + 5 }, (_, i) => ({ keyId: `key_${i}`, period: "total", spendMicros: 9_000_000_000 + i, tokens: i, requests: i }));
    await db.repos.limits.save({ counters: [...counters(6_000_000_000, 7), ...many], rates: [["key_l", '{"v":3}']], gone: ["key_m"] });

    const loaded = await db.repos.limits.load([day, month, "total"]);
    const own = loaded.counters.filter((c) => c.keyId === "key_l").map((c) => ({ ...c, spendMicros: Number(c.spendMicros), tokens: Number(c.tokens), requests: Number(c.requests) }));
    expect(own.map(({ keyId, period, spendMicros, tokens, requests }) => ({ keyId, period, spendMicros, tokens, requests })).sort((a, b) => a.period.localeCompare(b.period)))
      .toEqual(counters(6_000_000_000, 7).slice(0, 3).sort((a, b) => a.period.localeCompare(b.period)));
    expect(loaded.counters).toHaveLength(3 + many.length); // the day outside the asked periods stays out
    expect(Number(loaded.counters.find((c) => c.keyId === "key_7")!.spendMicros)).toBe(9_000_000_007);
    expect(loaded.rates.map(({ keyId, state }) => ({ keyId, state }))).toEqual([{ keyId: "key_l", state: '{"v":3}' }]);
    expect(await db.prisma.usageCounter.count({ where: { keyId: "key_l" } })).toBe(4);
    expect((await db.prisma.rateState.findUniqueOrThrow({ where: { keyId: "key_l" } })).updatedAt).toBeInstanceOf(Date);
  });

  it.skipIf(s.skip)("resources: objects upserted with the revision in one transaction, status replaced alone", async () => {
    expect(await db.repos.resources.write(1, () => [resource("a"), resource("b"), resource("c")])).toBe(1);
    const later = new Date(T0 + 60_000).toISOString();
    // the revision is the stored one + 1 whatever the writer proposed (another writer may have moved it)
    expect(await db.repos.resources.write(1, (rev) => [resource("a", { spec: '{"n":"a2"}', generation: 2, revision: rev, updatedAt: later }), resource("b", { deletedAt: later, revision: rev })])).toBe(2);
    await db.repos.resources.writeStatus([{ kind: "ApiKey", name: "a", status: '{"observedGeneration":2}' }, { kind: "ApiKey", name: "nope", status: "{}" }]);

    expect((await db.prisma.meta.findUniqueOrThrow({ where: { key: "revision" } })).value).toBe("2");
    const rows = await db.prisma.resource.findMany({ orderBy: { name: "asc" } });
    expect(rows.map((r) => r.name)).toEqual(["a", "b", "c"]);
    expect(rows[0]).toMatchObject({ spec: '{"n":"a2"}', generation: 2, revision: 2, status: '{"observedGeneration":2}', labels: '{"team":"a"}', deletedAt: null, createdAt: new Date(T0), updatedAt: new Date(later) });
    expect(rows[1]).toMatchObject({ deletedAt: new Date(later), status: "{}" });
    expect(rows[2]).toMatchObject({ generation: 1, revision: 1, status: "{}" });

    // a duplicate uid fails the statement: the revision and the other rows of the write stay as they were
    await expect(db.repos.resources.write(3, () => [resource("d"), resource("e", { uid: "uid-c" })])).rejects.toThrow();
    // so does a write its caller refuses once it sees the revision (a stale plan)
    await expect(db.repos.resources.write(3, () => { throw new Error("stale"); })).rejects.toThrow("stale");
    expect((await db.prisma.meta.findUniqueOrThrow({ where: { key: "revision" } })).value).toBe("2");
    expect(await db.prisma.resource.count({ where: { name: "d" } })).toBe(0);
  });

  it.skipIf(s.skip)("the object store writes through the repository and a fresh store reads it back", async () => {
    const store = await ResourceStore.open(db.prisma, db.repos.resources);
    const base = store.revision;
    await store.write([{ op: "upsert", kind: "Provider", name: "up", owner: "config:x", spec: { type: "openai" }, labels: { a: "1" } }]);
    store.setStatus("Provider", "up", { observedGeneration: 1, conditions: [] });
    await store.close();
    const again = await ResourceStore.open(db.prisma, db.repos.resources);
    expect(again.revision).toBe(base + 1);
    expect(again.get("Provider", "up")).toMatchObject({ spec: { type: "openai" }, labels: { a: "1" }, generation: 1, status: { observedGeneration: 1 } });
  });

  it.skipIf(s.skip)("a closed object store starts no database write: a write is refused and a status stays in memory", async () => {
    // svc's stop closes the store before the database; work still finishing (a reconcile, a late
    // request) must not begin a transaction the closing client would leave open
    const store = await ResourceStore.open(db.prisma, db.repos.resources);
    await store.close();
    await expect(store.write([{ op: "upsert", kind: "Provider", name: "late", owner: "config:x", spec: { type: "openai" } }])).rejects.toThrow(/store is closed/);
    store.setStatus("Provider", "up", { observedGeneration: 9, conditions: [] });
    expect(store.get("Provider", "up")?.status).toMatchObject({ observedGeneration: 9 });
    await new Promise((r) => setTimeout(r, 100)); // past the status flush delay (20 ms)
    const fresh = await ResourceStore.open(db.prisma, db.repos.resources);
    expect(fresh.get("Provider", "late")).toBeUndefined();
    expect(fresh.get("Provider", "up")?.status).toMatchObject({ observedGeneration: 1 });
    await fresh.close();
  });
});

describe("SQLite's synchronous side", () => {
  it("a limits save and the step after it (journal fold, audit drain) commit or roll back together", async () => {
    const db = await openStore(await tempDir("svc-repos-"), { env: {}, backgroundCheckpoints: false });
    try {
      const sync = db.repos.limits.sync!;
      sync.handle.prepare(`INSERT INTO "Reservation" (id, keyId, entities, day, month, spendMicros, promptTokens, tokens, at, requestId, action) VALUES (1,'k','k','d','m',1,1,1,1,'r','a')`).run();
      const save = { counters: [{ keyId: "k", period: "total", spendMicros: 5, tokens: 1, requests: 1 }], rates: [], gone: [] };
      const fold = () => sync.handle.prepare(`DELETE FROM "Reservation"`).run();
      expect(() => sync.save(save, () => { fold(); throw new Error("audit drain failed"); })).toThrow(/audit drain/);
      expect(await db.prisma.usageCounter.count()).toBe(0);
      expect(await db.prisma.reservation.count()).toBe(1);
      sync.save(save, () => { fold(); db.repos.audit.sync!.insert([audit(1)]); });
      expect(await db.prisma.usageCounter.count()).toBe(1);
      expect(await db.prisma.reservation.count()).toBe(0);
      expect(await db.prisma.auditEntry.count()).toBe(1);
    } finally {
      await db.close();
    }
  });
});
