// Edge cases of the downloads engine (engines/inference/download) against loopback stand-ins:
// an expected SHA-256 that the file on disk does not have, the token kept to the hub's host, and
// two processes pulling one source into one models dir at once.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { ModelDownloads, parseSource } from "../../engines/inference/download";
import { tempDir } from "../helpers/svc";
import { sha256, startHub, type HubStandin } from "./hub-standin";
import { generatedGguf, waitUntil } from "./helpers";
import { repoRoot } from "../helpers/cli";
import { spawn } from "node:child_process";

let hub: HubStandin;
let tiny: Buffer;

beforeAll(async () => {
  [hub, tiny] = await Promise.all([startHub(), generatedGguf("tiny")]);
  hub.files.set("svc-test/tiny-GGUF/tiny.Q8_0.gguf", { bytes: tiny });
  hub.manifests.set("svc-test/tiny-GGUF:Q8_0", "tiny.Q8_0.gguf");
});
afterAll(async () => {
  await hub?.close();
});

describe("expected sha256 of a file already on disk", () => {
  it("refuses a pull whose --sha256 the file on disk does not have, instead of calling it up to date", async () => {
    const dir = await tempDir("svc-dl-sha-");
    const src = "hf:svc-test/tiny-GGUF:Q8_0";
    const first = await new ModelDownloads(dir).pull(src, { endpoint: hub.url }).done;
    expect(first.downloaded).toBe(true);
    // the hub is unchanged; the user now expects another digest
    const wrong = "cd".repeat(32);
    const pull = new ModelDownloads(dir).pull(src, { endpoint: hub.url, refresh: true, sha256: wrong });
    await expect(pull.done).rejects.toThrow(/sha256 digest mismatch: expected cdcd/);
    // the previous file stays in place
    expect(sha256(await readFile(path.join(dir, "hf_svc-test_tiny.Q8_0.gguf")))).toBe(sha256(tiny));
    // and the right digest is accepted without fetching again
    const right = await new ModelDownloads(dir).pull(src, { endpoint: hub.url, refresh: true, sha256: sha256(tiny).toUpperCase() }).done;
    expect(right.downloaded).toBe(false);
  });
});

describe("the access token", () => {
  it("is not sent to a URL source on a host that is not the hub", async () => {
    const seen: string[] = [];
    const other = http.createServer((req, res) => {
      seen.push(`${req.method} ${req.headers.authorization ?? "-"}`);
      const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? "");
      const start = range ? Number(range[1]) : 0;
      const end = range && range[2] ? Number(range[2]) + 1 : tiny.length;
      const headers = { "accept-ranges": "bytes", "content-type": "application/octet-stream" };
      if (req.method === "HEAD") return void res.writeHead(200, { ...headers, "content-length": String(tiny.length) }).end();
      if (!range) return void res.writeHead(200, { ...headers, "content-length": String(tiny.length) }).end(tiny);
      res.writeHead(206, { ...headers, "content-length": String(end - start), "content-range": `bytes ${start}-${end - 1}/${tiny.length}` }).end(tiny.subarray(start, end));
    });
    await new Promise<void>((r) => other.listen(0, "127.0.0.1", r));
    try {
      const dir = await tempDir("svc-dl-token-");
      const url = `http://127.0.0.1:${(other.address() as AddressInfo).port}/files/other.Q8_0.gguf`;
      // the hub is elsewhere (a mirror on another host): the token is for it only
      const r = await new ModelDownloads(dir).pull(url, { endpoint: "http://hub.invalid/", token: "hf_secret" }).done;
      expect(r.downloaded).toBe(true);
      expect(seen.length).toBeGreaterThan(0);
      expect(seen.filter((s) => s.includes("hf_secret"))).toEqual([]);
    } finally {
      await new Promise((r) => other.close(r));
    }
  });
});

describe("two processes pulling one source", () => {
  it("svc models pull while another process downloads the same source: both succeed, the file is whole", async () => {
    const dir = await tempDir("svc-dl-race-");
    const src = "hf:svc-test/tiny-GGUF:Q8_0";
    const key = "svc-test/tiny-GGUF/tiny.Q8_0.gguf";
    // this process downloads (as svc serve would) and is held part-way
    hub.holdAt = 64 * 1024;
    const a = new ModelDownloads(dir).pull(src, { endpoint: hub.url, refresh: true });
    await new Promise<void>((r) => a.on((p) => p.phase === "downloading" && p.completed > 0 && r()));
    const before = hub.ranges.get(key)?.length ?? 0;
    // meanwhile the CLI pulls the same source into the same models dir
    const child = spawn(process.execPath, ["bin/svc.mjs", "models", "pull", src, "--dir", dir, "--endpoint", hub.url], { cwd: repoRoot, env: { ...process.env, NO_COLOR: "1" } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const cli = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
    // wait until the CLI fetches file data too (two downloaders in one staging dir) or says it
    // waits for the first download; then let the transfer finish
    await waitUntil("the CLI fetching or waiting", async () => (hub.ranges.get(key) ?? []).slice(before).some((r) => r !== "") || /waiting for another process/.test(stderr));
    hub.release();
    const [ra, rb] = await Promise.allSettled([a.done, cli]);
    expect(ra.status === "rejected" ? String(ra.reason) : "ok").toBe("ok");
    const r = (rb as PromiseFulfilledResult<Awaited<typeof cli>>).value;
    expect(r.stderr).not.toMatch(/ENOENT/);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/^waiting for another process downloading hf:svc-test\/tiny-GGUF:Q8_0/m);
    expect(r.stdout).toMatch(/^(pulled|up to date:) .*hf_svc-test_tiny\.Q8_0\.gguf/m);
    expect(sha256(await readFile(path.join(dir, "hf_svc-test_tiny.Q8_0.gguf")))).toBe(sha256(tiny));
    expect((await readdir(dir)).filter((f) => f.endsWith(".gguf"))).toEqual(["hf_svc-test_tiny.Q8_0.gguf"]);
    expect((await readdir(path.join(dir, ".svc-partial")).catch(() => [])).filter((f) => f.endsWith(".lock"))).toEqual([]);
  });
});

describe("a server that sends no Content-Length", () => {
  it("is verified by the expected sha256 instead of refused for a size of 0 nobody listed", async () => {
    const seen: string[] = [];
    const other = http.createServer((req, res) => {
      seen.push(req.method ?? "");
      // chunked, no size, no ranges (a dynamic server)
      res.writeHead(200, { "content-type": "application/octet-stream" });
      if (req.method === "HEAD") return void res.end();
      res.write(tiny.subarray(0, 1000));
      res.end(tiny.subarray(1000));
    });
    await new Promise<void>((r) => other.listen(0, "127.0.0.1", r));
    try {
      const url = `http://127.0.0.1:${(other.address() as AddressInfo).port}/m/nolength.Q8_0.gguf`;
      // without a digest there is nothing to check it against: refused, saying so
      const dir = await tempDir("svc-dl-nolength-");
      const bare = new ModelDownloads(dir).pull(url);
      await expect(bare.done).rejects.toThrow(/nolength\.Q8_0\.gguf unverifiable: the server sent no size .*sha256/);
      await expect(bare.done).rejects.not.toThrow(/lists 0/);
      // with the expected digest it is checked, and accepted
      const r = await new ModelDownloads(dir).pull(url, { sha256: sha256(tiny) }).done;
      expect(r.downloaded).toBe(true);
      expect(sha256(await readFile(path.join(dir, r.record.file)))).toBe(sha256(tiny));
      // a wrong digest is still refused
      const dir2 = await tempDir("svc-dl-nolength-");
      await expect(new ModelDownloads(dir2).pull(url, { sha256: "ef".repeat(32) }).done).rejects.toThrow(/sha256 digest mismatch/);
    } finally {
      await new Promise((r) => other.close(r));
    }
  });
});

describe("the spelling of a quantisation tag", () => {
  it("q8_0 and Q8_0 name one source: the second pull finds the first on disk", async () => {
    expect(parseSource("hf:svc-test/tiny-GGUF:q8_0").uri).toBe(parseSource("hf:svc-test/tiny-GGUF:Q8_0").uri);
    expect(parseSource("hf.co/svc-test/tiny-GGUF:iq4_xs").uri).toBe("hf:svc-test/tiny-GGUF:IQ4_XS");
    // a tag that is not a quantisation, and file paths, keep their spelling
    expect(parseSource("hf:svc-test/tiny-GGUF:Chat").uri).toBe("hf:svc-test/tiny-GGUF:Chat");
    expect(parseSource("hf:svc-test/tiny-GGUF/sub/Tiny.q8_0.gguf#Dev").uri).toBe("hf:svc-test/tiny-GGUF/sub/Tiny.q8_0.gguf#Dev");
    const dir = await tempDir("svc-dl-case-");
    const key = "svc-test/tiny-GGUF/tiny.Q8_0.gguf";
    const first = await new ModelDownloads(dir).pull("hf:svc-test/tiny-GGUF:q8_0", { endpoint: hub.url, refresh: true }).done;
    expect(first.downloaded).toBe(true);
    const sent = hub.sent.get(key);
    const again = await new ModelDownloads(dir).pull("hf:svc-test/tiny-GGUF:Q8_0", { endpoint: hub.url, refresh: true }).done;
    expect(again.downloaded).toBe(false);
    expect(hub.sent.get(key)).toBe(sent);
  });
});
