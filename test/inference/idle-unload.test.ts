// idleUnloadSeconds beyond what one Node timer holds (2^31-1 ms, about 24.8 days): Node fires
// such a timer after 1 ms, so a model meant to stay loaded for a month unloaded right after
// every request (and could be unloaded between its load and the first request's lease).
import { describe, expect, it } from "vitest";
import { collectChat } from "../../engines/chat/collect";
import { chatReq, tinySpec, useTinyLlama } from "./fixture";

const tiny = useTinyLlama();

describe("idle unload", { timeout: 60_000 }, () => {
  it("keeps a model with a month-long idleUnloadSeconds loaded after a request", async () => {
    const pool = tiny.pool();
    const month = 30 * 24 * 3600;
    try {
      pool.register("m", tinySpec({ idleUnloadSeconds: month }));
      const started = Date.now();
      expect((await collectChat(pool.chat(chatReq({ model: "m", maxTokens: 2 })))).usage.completionTokens).toBe(2);
      await new Promise((r) => setTimeout(r, 500)); // an overflowed timer fires after 1 ms
      const m = pool.stats().models.find((x) => x.name === "m");
      expect(m).toBeDefined();
      expect(Date.parse(m!.idleUnloadAt!) - started).toBeGreaterThan((month - 60) * 1000);
    } finally {
      await pool.close();
    }
  });
});
