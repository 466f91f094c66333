// The GGUF at a Model's path replaced on disk (a re-download moved into place, a file written by
// hand) while the model is loaded: the next reconcile (register with the same spec) makes the
// next request load the new file, instead of serving the old weights indefinitely.
import fs from "node:fs";
import path from "node:path";
import { getLlama, type Llama } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ModelPool, writeTinyGguf } from "../../engines/inference";
import { tinyModelsDir, tinySpec } from "./fixture";

let dir: string;
let llama: Llama;

beforeAll(async () => {
  dir = await tinyModelsDir();
  llama = await getLlama({ gpu: false });
}, 30_000);

afterAll(async () => {
  await llama?.dispose();
});

describe("ModelPool file replaced on disk", { timeout: 60_000 }, () => {
  it("serves the new file after the controller re-registers the unchanged spec", async () => {
    const pool = new ModelPool({ modelsDir: dir, llama });
    const file = path.join(dir, "swap.gguf");
    fs.copyFileSync(path.join(dir, "svc-tiny.gguf"), file);
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
