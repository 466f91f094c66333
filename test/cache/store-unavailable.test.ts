// A store that fails answers a miss (docs/cache.md; engines/cache/types.ts "A shared store's
// failure is a miss, never an error"): an embedded cache.sqlite that cannot be opened (a damaged
// file, a data dir that cannot be written) must not turn every request of a cached model into an
// error; the request is forwarded as a miss and nothing is stored.
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { openResponseCache } from "../../engines/cache";
import type { ChatRequest } from "../../engines/chat/types";
import { tempDir } from "../helpers/svc";
import { provider, standIn, startEnv } from "../gateway/fixtures";

const req: ChatRequest = { model: "m", messages: [{ role: "user", content: "q" }], sampling: {}, stream: false };
const key = { id: "key_a", role: "key", spec: {} };
const events = [
  { type: "text" as const, text: "a" },
  { type: "done" as const, finishReason: "stop" as const, usage: { promptTokens: 1, completionTokens: 1 } },
];

describe("embedded store that cannot be opened", () => {
  it("every lookup is a miss, never an error", async () => {
    const home = await tempDir("svc-cache-bad-");
    await writeFile(path.join(home, "cache.sqlite"), "this is not a SQLite database, it was damaged".repeat(100));
    const warned: string[] = [];
    const c = await openResponseCache(home, {}, (m) => warned.push(m));
    const p = await c.probeChat({}, undefined, key, req, "r1", 1000)!;
    expect(p.state).toBe("miss");
    expect(() => c.save(p, { kind: "chat", events }, 1000)).not.toThrow();
    const again = await c.probeChat({}, undefined, key, req, "r2", 2000)!;
    expect(again.state).toBe("miss");
    const embed = await c.probeEmbed({}, undefined, key, { model: "e", input: ["x"] }, "r3", 3000)!;
    expect(embed.state).toBe("miss");
    expect(warned.length).toBeGreaterThan(0);
    expect(c.counters()).toMatchObject({ hits: 0, misses: 3 });
  });

  it("a request of a cached model is answered (x-svc-cache: miss), not a 500", async () => {
    const up = await standIn();
    const home = await tempDir("svc-cache-bad-gw-");
    await writeFile(path.join(home, "cache.sqlite"), "damaged".repeat(1000));
    const env = await startEnv({ home });
    try {
      await env.apply([provider("up", up, [{ name: "gpt-c", inputPerMillion: 1, outputPerMillion: 1, cache: {} } as any])]);
      const k = await env.key();
      const r = await env.client(k.secret).chat.completions.create({ model: "gpt-c", messages: [{ role: "user", content: "hello" }] }).withResponse();
      expect(r.response.status).toBe(200);
      expect(r.response.headers.get("x-svc-cache")).toBe("miss");
      expect(r.data.choices[0].message.content).toBe("echo: hello");
    } finally {
      await env.stop();
      await up.close();
    }
  });
});
