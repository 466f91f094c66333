// kill -9 in the middle of a Model's download, start again: the download resumes from what is
// on disk (node-llama-cpp's downloader keeps its temp file and progress), and the hub stand-in
// is never asked again for the bytes it already delivered.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { startServeChild, type ServeChild } from "../helpers/serve-child";
import { tempDir } from "../helpers/svc";
import { sha256, startHub, type HubStandin } from "./hub-standin";
import { generatedGguf, modelDoc, modelStatus, waitUntil } from "./helpers";

const KEY = "svc-test/small-GGUF/small.Q8_0.gguf";
const CHUNK = 5 * 1024 * 1024; // the downloader's chunk: progress is saved per whole chunk

let hub: HubStandin;
let small: Buffer;
let child: ServeChild | undefined;

beforeAll(async () => {
  [hub, small] = await Promise.all([startHub(), generatedGguf("small")]);
  hub.files.set(KEY, { bytes: small });
  hub.manifests.set("svc-test/small-GGUF:Q8_0", "small.Q8_0.gguf");
});
afterAll(async () => {
  await child?.stop();
  await hub?.close();
});

/** The downloader's temp file in svc's staging dir, with the progress it saved after the data. */
async function savedProgress(modelsDir: string): Promise<{ chunks: number[] } | undefined> {
  const staging = path.join(modelsDir, ".svc-partial");
  for (const d of await readdir(staging).catch(() => [] as string[])) {
    for (const f of await readdir(path.join(staging, d))) {
      if (!f.endsWith(".ipull")) continue;
      const b = await readFile(path.join(staging, d, f));
      if (b.length <= small.length) return undefined;
      try {
        return JSON.parse(b.subarray(small.length).toString("utf8"));
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

describe("download resume", () => {
  it("resumes after kill -9 without fetching again what is on disk", async () => {
    expect(small.length).toBeGreaterThan(2 * CHUNK);
    const home = await tempDir("svc-resume-");
    const modelsDir = path.join(home, "models");
    const cfg = path.join(home, "model.json");
    await writeFile(cfg, modelDoc("small-hf", { source: "hf:svc-test/small-GGUF:Q8_0", download: { endpoint: hub.url }, embeddings: false }));
    const env = { SVC_HOME: home, SVC_MODELS_DIR: modelsDir };
    hub.holdAt = CHUNK; // the first chunk arrives whole, the rest waits
    child = await startServeChild(["--port", "0", "--config", cfg, "--no-quickstart"], env);
    const saved = await waitUntil("the first chunk saved", async () => {
      const p = await savedProgress(modelsDir);
      return p && p.chunks[0] === 2 ? p : undefined;
    });
    expect(saved.chunks.filter((c) => c === 2).length).toBe(1);
    const first = hub.sent.get(KEY)!;
    expect(first).toBe(CHUNK);
    await child.kill9();

    hub.release();
    hub.ranges.set(KEY, []);
    child = await startServeChild(["--port", "0", "--config", cfg, "--no-quickstart"], env);
    const url = child.url;
    const ready = await waitUntil("Ready after the restart", async () => {
      const s = await modelStatus(url, "small-hf");
      return s.ready?.status === "True" || s.ready?.reason === "DownloadFailed" ? s : undefined;
    });
    expect(ready.ready?.status).toBe("True");
    // the restart asked only for the bytes past the saved chunk
    const asked = hub.ranges.get(KEY)!.filter((r) => r !== "").map((r) => Number(/bytes=(\d+)-/.exec(r)![1]));
    expect(asked.length).toBeGreaterThan(0);
    expect(Math.min(...asked)).toBeGreaterThanOrEqual(CHUNK);
    expect(hub.sent.get(KEY)! - first).toBe(small.length - CHUNK);
    expect(sha256(await readFile(path.join(modelsDir, "hf_svc-test_small.Q8_0.gguf")))).toBe(sha256(small));
  });
});
