// The GGUF at a Model's path replaced on disk (a re-download moved into place, a file written by
// hand) while the model is loaded: the next reconcile (register with the same spec) makes the
// next request load the new file, instead of serving the old weights indefinitely.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { writeTinyGguf } from "../../engines/inference";
import { tinySpec, useTinyLlama } from "./fixture";

const tiny = useTinyLlama();

describe("ModelPool file replaced on disk", { timeout: 60_000 }, () => {
  it("serves the new file after the controller re-registers the unchanged spec", async () => {
    const pool = tiny.pool();
    const file = path.join(tiny.dir(), "swap.gguf");
    fs.copyFileSync(path.join(tiny.dir(), "svc-tiny.gguf"), file);
    const spec = tinySpec({ file: "swap.gguf", idleUnloadSeconds: 0 });
    try {
      pool.register("m", spec);
      expect((await pool.embed({ model: "m", input: ["hello"] })).vectors[0]).toHaveLength(64);
      // replaced the way downloads and ensureTinyModel do it: written aside, renamed into place
      await writeTinyGguf(`${file}.tmp`, "small");
      fs.renameSync(`${file}.tmp`, file);
      pool.register("m", spec); // the Model controller's next reconcile (resync)
      const info = await pool.info("m");
      expect(info.embeddingLength).toBe(256);
      expect((await pool.embed({ model: "m", input: ["hello"] })).vectors[0]).toHaveLength(info.embeddingLength!);
      pool.register("m", spec); // unchanged file: stays loaded
      expect(pool.list().find((m) => m.name === "m")?.loaded).toBe(true);
    } finally {
      await pool.close();
    }
  });
});
