// Memory at rest with a model (issue 43): loading node-llama-cpp and the quickstart's model keeps
// most of what it allocates, which made V8 grow its young generation to the maximum (2 x 16 MB
// semi-spaces) on the first chat, and an idle server kept those pages resident. engines/young-gen.ts
// holds the growth while a model loads; a probe (heap-spaces-probe.mjs) reads the new space's size
// after the first chat, with no collection forced first.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../helpers/cli";
import { until } from "../helpers/http";

const MB = 1024 * 1024;

describe("a server that loads a model at its first chat", () => {
  it("keeps V8's young generation small afterwards", async () => {
    const dir = mkdtempSync(path.join(process.env.SVC_TEST_ROOT ?? os.tmpdir(), "svc-young-"));
    const file = path.join(dir, "spaces.json");
    const p = spawn(process.execPath, ["--import", path.join(repoRoot, "test/startup/heap-spaces-probe.mjs"), path.join(repoRoot, "bin/svc.mjs"), "serve", "--port", "0"], {
      cwd: repoRoot,
      env: { ...process.env, SVC_HOME: path.join(dir, "home"), SVC_HEAP_SPACES_FILE: file, SVC_DATABASE_URL: "", SVC_REDIS_URL: "" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let err = "";
    let out = "";
    p.stderr.on("data", (d) => (err += d));
    p.stdout.on("data", (d) => (out += d)); // logs
    try {
      await until(() => /svc listening on/.test(err) || p.exitCode !== null, 60_000);
      const url = /svc listening on (http:\/\/\S+)/.exec(err)?.[1];
      expect(url, err).toBeTruthy();
      const chat = await fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "svc-tiny", messages: [{ role: "user", content: "Hello" }], max_tokens: 4 }) });
      expect(chat.status, await chat.clone().text()).toBe(200);
      expect(out, "the chat loaded the model").toMatch(/model svc-tiny loaded/);
      p.kill("SIGUSR2");
      await until(() => existsSync(file), 10_000);
      const spaces = JSON.parse(readFileSync(file, "utf8"));
      // held: 1-4 MB; grown by the load: 32 MB (16 MB semi-spaces)
      expect(spaces.new_space.physical / MB).toBeLessThanOrEqual(8);
    } finally {
      p.kill("SIGTERM");
      await new Promise((r) => (p.exitCode !== null ? r(null) : p.on("close", r)));
    }
  });
});
