// Recovery of write-ahead reservations on a real SQLite file: rows a crash left are folded into
// the periods they were admitted in (yesterday's row counts toward the total, not today), each
// once; an "interrupted" audit row is written only when the request's own row is missing; the
// table is left empty. And a settled request's row goes with the flush that holds its usage.
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openDb, type OpenedDb } from "../../prisma/client";
import { KeyCache } from "../../engines/gateway/keys";
import { Limits } from "../../engines/gateway/limits";
import { WriteAhead, journals, type ReservationRow } from "../../engines/gateway/limits/wal";
import { recover } from "../../engines/gateway/limits/wal-recover";
import { appendFileSync, existsSync } from "node:fs";
import { tempDir } from "../helpers/svc";

let db: OpenedDb | undefined;
afterEach(async () => {
  await db?.close();
  db = undefined;
});

const noKeys = () => new KeyCache();
const NOW = Date.UTC(2026, 10, 22, 12, 0, 0);

function insertRow(d: OpenedDb, id: number, at: number, requestId: string, spend: number) {
  const day = "day:" + new Date(at).toISOString().slice(0, 10);
  const month = "month:" + new Date(at).toISOString().slice(0, 7);
  d.sqlite
    .prepare(`INSERT INTO "Reservation" VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`)
    .run(id, "key_a", "key_a\norg:o", day, month, spend, 9, 19, at, requestId, "chat.completions", "gpt-x", "a", "o", "127.0.0.1");
}

describe("write-ahead recovery", () => {
  it("folds rows into their own periods once, audits only what is missing, and empties the table", async () => {
    db = await openDb(path.join(await tempDir("svc-wal-"), "svc.db"), { backgroundCheckpoints: false });
    insertRow(db, 1, NOW - 60_000, "req_today", 95_000);
    insertRow(db, 2, NOW - 86_400_000, "req_yesterday", 50_000);
    insertRow(db, 3, NOW - 30_000, "req_answered", 10_000);
    // req_answered's own audit row made it to disk before the crash
    db.sqlite.prepare(`INSERT INTO "AuditEntry" (id, timestamp, apiKeyId, requestId, action, status, latencyMs) VALUES (?,?,?,?,?,?,?)`)
      .run("aud_x", new Date(NOW - 30_000).toISOString().replace("Z", "+00:00"), "key_a", "req_answered", "chat.completions", "success", 3);

    const limits = new Limits(db.repos.limits, noKeys(), { now: () => NOW, flushMs: 0 });
    expect((await limits.load()).recovered).toBe(3);
    const r = limits.report("key_a");
    expect(r.today).toEqual({ spend: 0.105, currency: "USD", spend_usd: 0.105, tokens: 38, requests: 2 });
    expect(r.total).toEqual({ spend: 0.155, currency: "USD", spend_usd: 0.155, tokens: 57, requests: 3 });
    expect(limits.report("org:o").total.requests).toBe(3); // the roll-up entity too

    const audit = db.sqlite.prepare(`SELECT requestId, status, costMicros FROM "AuditEntry" ORDER BY requestId`).all();
    expect(audit).toEqual([
      { requestId: "req_answered", status: "success", costMicros: 0 },
      { requestId: "req_today", status: "interrupted", costMicros: 95_000 },
      { requestId: "req_yesterday", status: "interrupted", costMicros: 50_000 },
    ]);
    expect(db.sqlite.prepare(`SELECT count(*) AS n FROM "Reservation"`).get()).toEqual({ n: 0 });

    // a second start finds nothing more to fold in
    const again = new Limits(db.repos.limits, noKeys(), { now: () => NOW, flushMs: 0 });
    expect((await again.load()).recovered).toBe(0);
    expect(again.report("key_a").total.requests).toBe(3);
  });

  it("journal: a fold keeps only the rows in flight; unfolded lines are recovered, a torn last line is not", async () => {
    db = await openDb(path.join(await tempDir("svc-wal-"), "svc.db"), { backgroundCheckpoints: false });
    const d = db;
    const wal = new WriteAhead(d.sqlite);
    wal.start(recover(d.sqlite).generation);
    const row = (id: number): ReservationRow => ({
      id, keyId: "key_j", entities: ["key_j"], day: "day:2026-11-22", month: "month:2026-11", spend: 1000 * id, promptTokens: 3, tokens: 10,
      at: NOW + id, requestId: `req_${id}`, action: "chat.completions", model: "gpt-x", keyName: "j", organizationId: null, ip: "127.0.0.1",
    });
    const write = async (ids: number[]) => {
      const p = ids.map((id) => wal.add(row(id)));
      wal.commit();
      await Promise.all(p);
    };
    await write([1, 2, 3]);
    wal.settle(1); // its usage goes with the next flush
    d.repos.limits.sync!.save({ counters: [], rates: [], gone: [] }, () => wal.fold());
    wal.folded();
    expect(journals(d.file)).toEqual([]); // the folded journal is gone
    expect(d.sqlite.prepare(`SELECT id FROM "Reservation" ORDER BY id`).all()).toEqual([{ id: 2 }, { id: 3 }]);

    await write([4]);
    const [current] = journals(d.file);
    appendFileSync(current.file, '[5,"key_j","key_j","day:2026-'); // the process died inside a write
    // a crash here: a new start recovers rows 2 and 3 (table) and 4 (journal), not the torn 5
    const r = recover(d.sqlite);
    expect(r.rows).toBe(3);
    expect(r.generation).toBe(current.gen);
    expect(r.admissions.get("key_j")).toEqual([NOW + 2, NOW + 3, NOW + 4]);
    expect(d.sqlite.prepare(`SELECT requestId FROM "AuditEntry" WHERE status = 'interrupted' ORDER BY requestId`).all()).toEqual([
      { requestId: "req_2" }, { requestId: "req_3" }, { requestId: "req_4" },
    ]);
    expect(d.sqlite.prepare(`SELECT spendMicros, requests FROM "UsageCounter" WHERE keyId = 'key_j' AND period = 'total'`).get()).toEqual({ spendMicros: 9000, requests: 3 });
    expect(existsSync(current.file)).toBe(false);
    expect(recover(d.sqlite).rows).toBe(0); // nothing twice
    wal.close();
  });
});
