// readModelInfo caches a GGUF's header by path: a file replaced at that path by another one with
// the same modification time (cp -p, rsync -t, an unpacked archive) is read afresh.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { writeTinyGguf } from "../../engines/inference";
import { readModelInfo } from "../../engines/inference/info";
import { tinyModelsDir } from "./fixture";

describe("readModelInfo cache", { timeout: 60_000 }, () => {
  it("describes the new file after a replacement that kept the mtime", async () => {
    const dir = await tinyModelsDir();
    const file = path.join(dir, "m.gguf");
    fs.copyFileSync(path.join(dir, "svc-tiny.gguf"), file);
    const mtime = new Date("2024-05-01T12:00:00Z"); // whole seconds, as archives and cp -p keep them
    fs.utimesSync(file, mtime, mtime);
    const before = await readModelInfo("m", file, {} as never);
    expect(before.embeddingLength).toBe(64);
    await writeTinyGguf(`${file}.tmp`, "small");
    fs.utimesSync(`${file}.tmp`, mtime, mtime); // as cp -p would leave it
    fs.renameSync(`${file}.tmp`, file);
    const after = await readModelInfo("m", file, {} as never);
    expect(after.sizeBytes).toBe(fs.statSync(file).size);
    expect(after.embeddingLength).toBe(256);
  });
});
