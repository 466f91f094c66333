// A Model's manifest changing while requests are on their way: they are served (by the old or
// the new load), never failed because of the reload.
import { describe, expect, it } from "vitest";
import { collectChat } from "../../engines/chat/collect";
import { chatReq, tinySpec, useTinyLlama } from "./fixture";

const tiny = useTinyLlama();

describe("ModelPool manifest change", { timeout: 60_000 }, () => {
  it("serves a request whose first load was under way when the spec changed", async () => {
    const pool = tiny.pool();
    try {
      pool.register("m", tinySpec());
      const run = collectChat(pool.chat(chatReq({ model: "m", maxTokens: 3 })));
      await Promise.resolve();
      pool.register("m", tinySpec({ threads: 2 })); // a new generation of the manifest
      const r = await run;
      expect(r.usage.completionTokens).toBe(3);
    } finally {
      await pool.close();
    }
  });

  it("serves a request that found the model loaded just before the spec changed", async () => {
    const pool = tiny.pool();
    try {
      pool.register("m", tinySpec());
      await collectChat(pool.chat(chatReq({ model: "m", maxTokens: 1 })));
      const it = pool.chat(chatReq({ model: "m", maxTokens: 3 }))[Symbol.asyncIterator]();
      const first = it.next();
      pool.register("m", tinySpec({ contextSize: 512 }));
      const rest = [await first];
      for (let x = await it.next(); !x.done; x = await it.next()) rest.push(x);
      expect(rest.at(-1)?.value).toMatchObject({ type: "done", usage: { completionTokens: 3 } });
    } finally {
      await pool.close();
    }
  });

  it("serves an embedding whose load was under way when the spec changed", async () => {
    const pool = tiny.pool();
    try {
      pool.register("m", tinySpec());
      const run = pool.embed({ model: "m", input: ["hello"] });
      await Promise.resolve();
      pool.register("m", tinySpec({ threads: 2 }));
      expect((await run).vectors).toHaveLength(1);
    } finally {
      await pool.close();
    }
  });
});
