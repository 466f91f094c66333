// A Model with spec.source against a loopback stand-in of the Hugging Face hub: status shows the
// download's progress, Ready only once the file is whole and verified, then chat answers; a
// split GGUF; a digest or size mismatch refused with the previous file kept and still served.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import OpenAI from "openai";
import { startTestSvc, type TestSvc } from "../helpers/svc";
import { sha256, startHub, type HubStandin } from "./hub-standin";
import { apply, generatedGguf, modelDoc, modelStatus, waitUntil } from "./helpers";

let hub: HubStandin;
let t: TestSvc;
let tiny: Buffer;
let modelsDir: string;

beforeAll(async () => {
  [hub, tiny] = await Promise.all([startHub(), generatedGguf("tiny")]);
  hub.files.set("svc-test/tiny-GGUF/tiny.Q8_0.gguf", { bytes: tiny });
  hub.manifests.set("svc-test/tiny-GGUF:Q8_0", "tiny.Q8_0.gguf");
  t = await startTestSvc();
  modelsDir = t.svc.modelsDir;
});
afterAll(async () => {
  await t?.stop();
  await hub?.close();
});

const chat = (model: string) =>
  new OpenAI({ baseURL: `${t.url}/v1`, apiKey: "unused", maxRetries: 0 }).chat.completions.create({ model, messages: [{ role: "user", content: "hello" }], max_tokens: 4, temperature: 0 });

describe("Model source", () => {
  it("downloads an hf: URI with progress in status, is Ready once verified, and answers", async () => {
    hub.holdAt = 256 * 1024; // the transfer waits here until released
    await apply(t.url, modelDoc("tiny-hf", { source: "hf:svc-test/tiny-GGUF:Q8_0", download: { endpoint: hub.url } }));
    const during = await waitUntil("download progress in status", async () => {
      const s = await modelStatus(t.url, "tiny-hf");
      return s.download && s.download.completedBytes > 0 && s.download.totalBytes === tiny.length ? s : undefined;
    });
    expect(during.ready?.status).toBe("False");
    expect(during.ready?.reason).toBe("Downloading");
    expect(during.download!.phase).toBe("downloading");
    expect(during.download!.completedBytes).toBeLessThanOrEqual(256 * 1024);
    // nothing half-written in the models dir, and the Model is not served yet
    expect((await readdir(modelsDir)).filter((f) => f.endsWith(".gguf"))).toEqual([]);
    const refused = await chat("tiny-hf").then(() => 200, (e: { status?: number }) => e.status);
    expect([404, 503]).toContain(refused);

    hub.release();
    const ready = await waitUntil("Ready", async () => {
      const s = await modelStatus(t.url, "tiny-hf");
      return s.ready?.status === "True" ? s : undefined;
    });
    expect(ready.ready?.message).toMatch(/downloaded and verified/);
    const file = path.join(modelsDir, "hf_svc-test_tiny.Q8_0.gguf");
    expect(sha256(await readFile(file))).toBe(sha256(tiny));
    const answer = await chat("tiny-hf");
    expect(answer.choices[0]!.message.content!.length).toBeGreaterThan(0);
  });

  it("downloads every part of a split GGUF and serves it", async () => {
    const half = Math.ceil(tiny.length / 2);
    // two byte-parts of the same GGUF stand in for gguf-split's parts: the downloader fetches both
    hub.files.set("svc-test/split-GGUF/split.Q8_0-00001-of-00002.gguf", { bytes: tiny.subarray(0, half) });
    hub.files.set("svc-test/split-GGUF/split.Q8_0-00002-of-00002.gguf", { bytes: tiny.subarray(half) });
    hub.manifests.set("svc-test/split-GGUF:Q8_0", "split.Q8_0-00001-of-00002.gguf");
    await apply(t.url, modelDoc("split-hf", { source: "hf:svc-test/split-GGUF:Q8_0", download: { endpoint: hub.url }, embeddings: false }));
    const s = await waitUntil("split Ready", async () => {
      const st = await modelStatus(t.url, "split-hf");
      return st.ready?.status === "True" || st.ready?.reason === "DownloadFailed" ? st : undefined;
    });
    expect(s.ready?.status).toBe("True");
    const parts = (await readdir(modelsDir)).filter((f) => f.includes("split")).sort();
    expect(parts).toEqual(["hf_svc-test_split.Q8_0-00001-of-00002.gguf", "hf_svc-test_split.Q8_0-00002-of-00002.gguf"]);
    expect(hub.sent.get("svc-test/split-GGUF/split.Q8_0-00002-of-00002.gguf")).toBe(tiny.length - half);
  });

  it("refuses a digest or size mismatch, keeping the previous file in place and served", async () => {
    const file = path.join(modelsDir, "hf_svc-test_tiny.Q8_0.gguf");
    const before = sha256(await readFile(file));
    // the hub now has a new revision of the file whose bytes do not match the digest it lists
    const changed = Buffer.from(tiny);
    changed[changed.length - 1] ^= 0xff;
    hub.files.set("svc-test/tiny-GGUF/tiny.Q8_0.gguf", { bytes: changed, advertisedSha256: "ab".repeat(32) });
    // a new expected digest makes the controller fetch again
    await apply(t.url, modelDoc("tiny-hf", { source: "hf:svc-test/tiny-GGUF:Q8_0", file: "hf_svc-test_tiny.Q8_0.gguf", download: { endpoint: hub.url, sha256: sha256(changed) } }));
    const s = await waitUntil("mismatch reported", async () => {
      const st = await modelStatus(t.url, "tiny-hf");
      return st.ready?.reason === "DownloadFailed" ? st : undefined;
    });
    expect(s.ready?.message).toMatch(/sha256 digest mismatch: expected abab/);
    expect(s.ready?.message).toMatch(/previous file/);
    expect(sha256(await readFile(file))).toBe(before);
    expect((await chat("tiny-hf")).choices[0]!.message.content!.length).toBeGreaterThan(0);

    // a size the hub lists that the bytes do not have is refused the same way
    hub.files.set("svc-test/tiny-GGUF/tiny.Q8_0.gguf", { bytes: changed, advertisedSize: changed.length + 1 });
    const job = t.svc.engines.downloads!.pull("hf:svc-test/tiny-GGUF:Q8_0", { endpoint: hub.url, refresh: true });
    await expect(job.done).rejects.toThrow(/has \d+ bytes, the hub lists \d+/);
    expect(sha256(await readFile(file))).toBe(before);
    expect(existsSync(file)).toBe(true);
  });
});

describe("free disk check", () => {
  it("refuses a download larger than the free space before fetching anything, with a clear reason", async () => {
    // the hub lists a file of 1 PiB: svc checks the disk before the downloader starts
    const huge = 2 ** 50;
    hub.files.set("svc-test/huge-GGUF/huge.Q8_0.gguf", { bytes: tiny, advertisedSize: huge, advertisedLength: huge });
    hub.manifests.set("svc-test/huge-GGUF:Q8_0", "huge.Q8_0.gguf");
    await apply(t.url, modelDoc("huge-hf", { source: "hf:svc-test/huge-GGUF:Q8_0", download: { endpoint: hub.url } }));
    const s = await waitUntil("refusal in status", async () => {
      const st = await modelStatus(t.url, "huge-hf");
      return st.ready?.reason === "DownloadFailed" ? st : undefined;
    });
    expect(s.ready?.message).toMatch(new RegExp(`not enough free disk space in .*: the download needs ${huge} bytes, \\d+ are free`));
    expect(hub.sent.get("svc-test/huge-GGUF/huge.Q8_0.gguf")).toBeUndefined();
    expect((await readdir(modelsDir)).filter((f) => f.includes("huge"))).toEqual([]);
  });
});
