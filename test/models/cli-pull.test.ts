// `svc models pull` from a loopback stand-in of the hub: a progress bar when stderr is a terminal
// (driven in a pseudo-terminal by util-linux's `script`), plain progress lines otherwise; then
// `svc models list` shows the source and quantisation, and `svc models rm` deletes the file.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { repoRoot, runCli } from "../helpers/cli";
import { tempDir } from "../helpers/svc";
import { startHub, type HubStandin } from "./hub-standin";
import { generatedGguf } from "./helpers";

let hub: HubStandin;
let small: Buffer;
const hasScript = spawnSync("script", ["--version"]).status === 0;

beforeAll(async () => {
  [hub, small] = await Promise.all([startHub(), generatedGguf("small")]);
  hub.files.set("svc-test/small-GGUF/small.Q8_0.gguf", { bytes: small });
  hub.manifests.set("svc-test/small-GGUF:Q8_0", "small.Q8_0.gguf");
});
afterAll(async () => {
  await hub?.close();
});

/** Run a command under a pseudo-terminal; resolves with everything it wrote. */
function inPty(cmd: string, env: Record<string, string>, onOutput: (all: string) => void = () => {}): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("script", ["-qfec", cmd, "/dev/null"], { cwd: repoRoot, env: { ...process.env, NO_COLOR: "1", ...env }, stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    const more = (d: Buffer) => {
      out += d;
      onOutput(out);
    };
    child.stdout.on("data", more);
    child.stderr.on("data", more);
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, out }));
    child.stdin.end();
  });
}

describe("svc models pull", () => {
  it.skipIf(!hasScript)("shows a progress bar in a terminal", async () => {
    const dir = await tempDir("svc-pull-tty-");
    hub.holdAt = Math.floor(small.length / 2); // the transfer waits half-way until the bar shows it
    const partial = /\rdownloading \[#+-+\] +\d+% /;
    const r = await inPty(`${JSON.stringify(process.execPath)} bin/svc.mjs models pull hf:svc-test/small-GGUF:Q8_0 --dir ${JSON.stringify(dir)} --endpoint ${hub.url}`, {}, (out) => {
      if (hub.holdAt !== undefined && partial.test(out)) hub.release();
    });
    expect(r.code, r.out).toBe(0);
    expect(r.out).toMatch(partial); // redrawn in place, part done
    expect(r.out).toMatch(/downloading \[#{30}\] 100% /);
    expect(r.out).toContain("verifying sha256 digest");
    expect(existsSync(path.join(dir, "hf_svc-test_small.Q8_0.gguf"))).toBe(true);
  });

  it("prints plain progress lines without a terminal; list shows source and quantisation; rm deletes", async () => {
    const dir = await tempDir("svc-pull-plain-");
    const r = await runCli(["models", "pull", "hf:svc-test/small-GGUF:Q8_0", "--dir", dir, "--endpoint", hub.url]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toContain("\r");
    expect(r.stderr).toMatch(/^downloading 100% \(/m);
    expect(r.stderr).toMatch(/^verifying sha256 digest$/m);
    expect(r.stdout).toMatch(/^pulled .*hf_svc-test_small\.Q8_0\.gguf/m);
    const list = await runCli(["models", "list", "--dir", dir, "--home", dir]);
    expect(list.stdout).toMatch(/hf_svc-test_small\.Q8_0\.gguf .* Q8_0 +- +hf:svc-test\/small-GGUF:Q8_0/);
    const rm = await runCli(["models", "rm", "hf_svc-test_small.Q8_0.gguf", "--dir", dir]);
    expect(rm.code, rm.stderr).toBe(0);
    expect(existsSync(path.join(dir, "hf_svc-test_small.Q8_0.gguf"))).toBe(false);
  });

  it("says in one line why a source cannot be pulled (no stack trace)", async () => {
    const dir = await tempDir("svc-pull-bad-");
    const pull = (uri: string) => runCli(["models", "pull", uri, "--dir", dir, "--endpoint", hub.url]);
    const [notSource, noQuant, missing] = await Promise.all([pull("llama3"), pull("hf:svc-test/small-GGUF:Q2_K"), pull("hf:svc-test/small-GGUF/missing.gguf")]);
    expect(notSource.stderr).toMatch(/^svc: not a model source: "llama3"; use hf:<user>\/<repo>:<quant>/m);
    expect(noQuant.stderr).toMatch(/^svc: cannot resolve hf:svc-test\/small-GGUF:Q2_K: .*"Q2_K".* does not exist$/m);
    expect(missing.stderr).toMatch(/^svc: cannot download hf:svc-test\/small-GGUF\/missing\.gguf: \S+\/missing\.gguf does not exist \(404\)$/m);
    for (const r of [notSource, noQuant, missing]) {
      expect(r.code).toBe(1);
      expect(r.stderr).not.toMatch(/^\s+at /m);
    }
  });
});
