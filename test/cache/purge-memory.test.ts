// A purge drops answers from the in-memory tier too (docs/cache.md "Storage": "An answer there
// ... is dropped by a purge"; "Administration": `--key K` drops those stored by key K). An answer
// read back from the store into memory by another key of the scope (after a restart, or on
// another replica in shared mode) is still the storing key's answer: `purge --key K` drops it.
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ResponseCache } from "../../engines/cache";
import { SqliteCacheStore } from "../../engines/cache/sqlite";
import type { ChatRequest } from "../../engines/chat/types";
import { tempDir } from "../helpers/svc";

const decl = { scope: "organization" } as any;
const req: ChatRequest = { model: "m", messages: [{ role: "user", content: "secret plan" }], sampling: {}, stream: false };
const keyA = { id: "key_a", role: "key", spec: { organization_id: "o" } };
const keyB = { id: "key_b", role: "key", spec: { organization_id: "o" } };
const events = [
  { type: "text" as const, text: "the plan" },
  { type: "done" as const, finishReason: "stop" as const, usage: { promptTokens: 3, completionTokens: 2 } },
];

async function probe(c: ResponseCache, key: typeof keyA, id: string, now: number) {
  return await c.probeChat(decl, undefined, key, req, id, now)!;
}

describe("response cache purge by key", () => {
  it("drops the key's answer from memory even when another key of the scope read it in", async () => {
    const file = path.join(await tempDir("svc-cache-purge-"), "cache.sqlite");
    const t0 = 1_000_000;
    const first = new ResponseCache(() => new SqliteCacheStore(file, 60_000));
    const miss = await probe(first, keyA, "req-a", t0);
    expect(miss.state).toBe("miss");
    first.save(miss, { kind: "chat", events }, t0);
    await first.close();

    // a restart: memory is empty, key B (same organization) reads key A's answer from the store
    const c = new ResponseCache(() => new SqliteCacheStore(file, 60_000));
    const hit = await probe(c, keyB, "req-b", t0 + 1);
    expect(hit.state).toBe("hit");
    expect(hit.entry?.requestId).toBe("req-a");

    expect(await c.purge({ keyId: "key_a" })).toBe(1); // the store had it
    const after = await probe(c, keyB, "req-b2", t0 + 2);
    expect(after.state).toBe("miss"); // and memory no longer answers with it
    await c.close();
  });
});
