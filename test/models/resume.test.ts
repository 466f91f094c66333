// svc stop, then kill -9, in the middle of a Model's download, start again: the download resumes
// from what is on disk (node-llama-cpp's downloader keeps its temp file and progress), and the hub stand-in
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

/** Wait until the downloader's temp file records `n` whole chunks. */
const chunksSaved = (modelsDir: string, n: number) =>
  waitUntil(`${n} chunks saved`, async () => {
    const p = await savedProgress(modelsDir);
    return p && p.chunks.filter((c) => c === 2).length === n ? p : undefined;
  });

/** The offsets the hub was asked for since `since` requests ago. */
const askedFrom = (since: number) => hub.ranges.get(KEY)!.slice(since).filter((r) => r !== "").map((r) => Number(/bytes=(\d+)-/.exec(r)![1]));

describe("download resume", () => {
  it("resumes after svc stop and after kill -9 without fetching again what is on disk", async () => {
    expect(small.length).toBeGreaterThan(2 * CHUNK);
    const home = await tempDir("svc-resume-");
    const modelsDir = path.join(home, "models");
    const cfg = path.join(home, "model.json");
    await writeFile(cfg, modelDoc("small-hf", { source: "hf:svc-test/small-GGUF:Q8_0", download: { endpoint: hub.url }, embeddings: false }));
    const env = { SVC_HOME: home, SVC_MODELS_DIR: modelsDir };
    const serve = () => startServeChild(["--port", "0", "--config", cfg, "--no-quickstart"], env);

    // 1. the first chunk arrives whole, the rest waits; svc stop cancels the download cleanly
    hub.holdAt = CHUNK;
    child = await serve();
    await chunksSaved(modelsDir, 1);
    expect(hub.sent.get(KEY)).toBe(CHUNK);
    expect(await child.stop()).toBe(0);
    expect(child.stdout()).toMatch(/model download failed: hf:svc-test\/small-GGUF:Q8_0: download of .* did not finish: cancelled \(svc is shutting down\)/);

    // 2. the next start asks only for what follows the saved chunk; a second chunk, then kill -9
    let since = hub.ranges.get(KEY)!.length;
    hub.holdAt = 2 * CHUNK;
    child = await serve();
    await chunksSaved(modelsDir, 2);
    expect(Math.min(...askedFrom(since))).toBeGreaterThanOrEqual(CHUNK);
    expect(hub.sent.get(KEY)).toBe(2 * CHUNK);
    await child.kill9();

    // 3. the last start resumes past both chunks and the Model becomes Ready
    since = hub.ranges.get(KEY)!.length;
    hub.release();
    child = await serve();
    const url = child.url;
    const ready = await waitUntil("Ready after the restart", async () => {
      const s = await modelStatus(url, "small-hf");
      return s.ready?.status === "True" || s.ready?.reason === "DownloadFailed" ? s : undefined;
    });
    expect(ready.ready?.status).toBe("True");
    const asked = askedFrom(since);
    expect(asked.length).toBeGreaterThan(0);
    expect(Math.min(...asked)).toBeGreaterThanOrEqual(2 * CHUNK);
    // every byte of the file was sent once over the three runs
    expect(hub.sent.get(KEY)).toBe(small.length);
    expect(sha256(await readFile(path.join(modelsDir, "hf_svc-test_small.Q8_0.gguf")))).toBe(sha256(small));
  });
});
