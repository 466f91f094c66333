// The embedded store (engines/cache/sqlite.ts) on a real SQLite file: answers survive a restart
// (the file reopened), expire with their TTL, and each model keeps maxEntries, least recently
// used evicted first.
import path from "node:path";
import { describe, expect, it } from "vitest";
import { SqliteCacheStore } from "../../engines/cache/sqlite";
import { tempDir } from "../helpers/svc";

const entry = (text: string, at: number) => ({ body: { kind: "chat" as const, events: [{ type: "text" as const, text }] }, requestId: `req-${text}`, createdAt: at });
const meta = (maxEntries = 10) => ({ model: "m", scope: "key:k", keyId: "k", ttlMs: 60_000, maxEntries });

describe("embedded response cache store", () => {
  it("survives a restart, expires, and evicts the least recently used", async () => {
    const file = path.join(await tempDir("svc-cache-"), "cache.sqlite");
    let s = new SqliteCacheStore(file, 60_000);
    s.put("a", entry("a", 1000), meta(), 1000);
    await s.close();
    s = new SqliteCacheStore(file, 60_000); // a restart
    expect(s.get("a", 2000)).toMatchObject({ requestId: "req-a", body: { events: [{ text: "a" }] } });
    expect(s.get("a", 1000 + 60_000)).toBeUndefined(); // past its TTL
    s.put("b", entry("b", 3000), meta(2), 3000);
    s.put("c", entry("c", 4000), meta(2), 4000);
    s.get("b", 5000); // b is now used more recently than c
    await s.close(); // last-use times are written at close (and each second)
    s = new SqliteCacheStore(file, 60_000);
    s.put("d", entry("d", 6000), meta(2), 6000);
    expect(s.get("c", 7000)).toBeUndefined();
    expect(s.get("b", 7000)).toBeDefined();
    expect(s.get("d", 7000)).toBeDefined();
    expect(await s.purge({ keyId: "k" })).toBe(2);
    expect((await s.stats()).entries).toBe(0);
    await s.close();
  });
});
