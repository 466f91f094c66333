// The replay's window and the store's retention: a duration or UTC bounds, a clear error for a
// bad one, and a window that starts before the oldest entry the store holds says how much of it
// was available. A real SQLite store file; no server.
import { describe, it, expect, afterAll } from "vitest";
import path from "node:path";
import { openDb, type OpenedDb } from "../../prisma/client";
import { auditRow } from "../../engines/gateway/audit/rows";
import { usageDbOf } from "../../engines/gateway/usage-report";
import { replay, replayWindow } from "../../engines/gateway/replay";
import { hashSecret } from "../../engines/gateway/keys";
import { SvcError } from "../../engines/errors";
import { tempDir } from "../helpers/svc";

const HOUR = 3_600_000;
let db: OpenedDb | undefined;
afterAll(async () => db?.close());

describe("replay window", () => {
  it("takes a duration ending now, or UTC bounds, and refuses what is neither", () => {
    const now = Date.parse("2026-11-27T12:00:00Z");
    expect(replayWindow({ replay: "24h" }, now)).toEqual({ from: now - 24 * HOUR, to: now });
    expect(replayWindow({ replay: "7d" }, now).from).toBe(now - 7 * 24 * HOUR);
    expect(replayWindow({ from: "2026-11-26", to: "2026-11-26T06:00:00Z" }, now)).toEqual({ from: Date.parse("2026-11-26T00:00:00Z"), to: Date.parse("2026-11-26T06:00:00Z") });
    expect(replayWindow({ from: "2026-11-26T00:00:00Z", replay: "2h" }, now).to).toBe(Date.parse("2026-11-26T02:00:00Z"));
    for (const bad of [{ replay: "yesterday" }, { replay: "0h" }, { from: "2026-11-26T00:00:00" }, { from: "2026-11-27T00:00:00Z", to: "2026-11-26T00:00:00Z" }, {}]) {
      let err: unknown;
      try {
        replayWindow(bad, now);
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify(bad)).toBeInstanceOf(SvcError);
      expect((err as SvcError).code).toBe("invalid_request");
    }
  });

  it("a window older than the store's oldest entry says how much of it was available", async () => {
    db = await openDb(path.join(await tempDir("svc-replay-store-"), "svc.db"), { backgroundCheckpoints: false });
    const day = Date.parse("2026-11-20T00:00:00Z");
    const rows = [];
    // entries only in the second half of the day (the first half is past retention)
    for (let i = 0; i < 12; i++) {
      const ts = new Date(day + 12 * HOUR + i * HOUR);
      rows.push(auditRow({ timestamp: ts, apiKeyId: "k1", apiKeyName: "k1", requestId: `r${i}`, action: "chat.completions", model: "m", provider: "p", status: "success", latencyMs: 1, promptTokens: 10, completionTokens: 5, costMicros: 15n, metadata: {} }, `aud_${i}`, ts));
    }
    db.repos.audit.sync!.insert(rows);
    const objects = [
      { kind: "Provider", name: "p", owner: "config:t", createdAt: "", spec: { type: "openai", baseUrl: "http://127.0.0.1:9", models: [{ name: "m", inputPerMillion: 1, outputPerMillion: 1 }] } },
      { kind: "ApiKey", name: "k1", owner: "config:t", createdAt: "", spec: { secretHash: `sha256:${hashSecret("k1")}` } },
    ];
    const r = await replay(db, objects, objects, { from: day, to: day + 24 * HOUR });
    expect(r.entries).toBe(12);
    expect(r.window.availableFrom).toBe("2026-11-20T12:00:00.000Z");
    expect(r.window.coverage).toBe(0.5);
    expect(r.differences).toBe(0);
    expect(r.summary).toContain("only 50% of the window is held");
    expect(r.totals.spend).toEqual({ recordedMicros: 180, currentMicros: 180, proposedMicros: 180 });
  });
});
