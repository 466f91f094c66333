import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { defaultModelPath, ensureTinyModel, writeTinyGguf } from "../../engines/inference";

describe("generated GGUF", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "svc-gguf-"));

  it("is byte-identical across writes", async () => {
    const a = await writeTinyGguf(path.join(dir, "a.gguf"), "tiny");
    const b = await writeTinyGguf(path.join(dir, "b.gguf"), "tiny");
    expect(a.bytes).toBe(b.bytes);
    expect(a.bytes).toBeLessThan(1 << 20);
    expect(fs.readFileSync(a.file).equals(fs.readFileSync(b.file))).toBe(true);
    expect(fs.readFileSync(a.file).subarray(0, 4).toString()).toBe("GGUF");
  });

  it("ensureTinyModel writes once, then leaves the file alone", async () => {
    const sub = path.join(dir, "models");
    const file = await ensureTinyModel(sub);
    expect(file).toBe(defaultModelPath(sub));
    const mtime = fs.statSync(file).mtimeMs;
    await ensureTinyModel(sub);
    expect(fs.statSync(file).mtimeMs).toBe(mtime);
    expect(fs.readdirSync(sub)).toEqual(["svc-tiny.gguf"]); // no temp file left behind
  });
});
