// ttlSeconds is "how long an answer is kept" (docs/cache.md "Declaring it"). An operator who
// shortens it (a model changed upstream, answers go stale sooner) must not keep being answered
// with entries older than the new TTL, from memory or from the store, until the old TTL ran out.
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ResponseCache } from "../../engines/cache";
import { SqliteCacheStore } from "../../engines/cache/sqlite";
import type { ChatRequest } from "../../engines/chat/types";
import { tempDir } from "../helpers/svc";

const req: ChatRequest = { model: "m", messages: [{ role: "user", content: "q" }], sampling: {}, stream: false };
const key = { id: "key_a", role: "key", spec: {} };
const events = [
  { type: "text" as const, text: "a" },
  { type: "done" as const, finishReason: "stop" as const, usage: { promptTokens: 1, completionTokens: 1 } },
];

describe("response cache TTL shortened by the operator", () => {
  it("an entry older than the model's current ttlSeconds is a miss (memory and store)", async () => {
    const file = path.join(await tempDir("svc-cache-ttl-"), "cache.sqlite");
    const t0 = 5_000_000;
    const long = { ttlSeconds: 3600 } as any;
    const short = { ttlSeconds: 60 } as any; // the Provider re-applied with a shorter TTL
    let c = new ResponseCache(() => new SqliteCacheStore(file, 60_000));
    const miss = await c.probeChat(long, undefined, key, req, "r1", t0)!;
    c.save(miss, { kind: "chat", events }, t0);
    expect((await c.probeChat(long, undefined, key, req, "r2", t0 + 1000)!).state).toBe("hit");
    // two minutes later, under the 60 s TTL: from memory
    expect((await c.probeChat(short, undefined, key, req, "r3", t0 + 120_000)!).state).toBe("miss");
    await c.close();
    // and from the store (memory empty after a restart)
    c = new ResponseCache(() => new SqliteCacheStore(file, 60_000));
    expect((await c.probeChat(short, undefined, key, req, "r4", t0 + 120_000)!).state).toBe("miss");
    expect((await c.probeChat(long, undefined, key, req, "r5", t0 + 120_000)!).state).toBe("hit");
    await c.close();
  });
});
