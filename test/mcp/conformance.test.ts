// The MCP conformance suite (@modelcontextprotocol/conformance 0.1.13, the newest that runs on
// Node 20) against svc's /mcp, with a baseline of expected failures, each explained in
// conformance-expected-failures.yml. The run's summary is written to conformance-result.md in the
// run's temp dir (under SVC_TEST_ROOT), never into the repository, and its path is printed. No
// copy is committed: the baseline is what stays true, since the suite fails on an entry that passes.
import path from "node:path";
import { spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";
import { repoRoot } from "../helpers/cli";

const cli = path.join(repoRoot, "node_modules/@modelcontextprotocol/conformance/dist/index.js");
const baseline = path.join(repoRoot, "test/mcp/conformance-expected-failures.yml");

function run(args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? -1, out }));
  });
}

describe("MCP conformance of /mcp", () => {
  let s: TestSvc;
  beforeAll(async () => {
    s = await startTestSvc();
  });
  afterAll(async () => {
    await s?.stop();
  });

  it("passes every scenario outside the explained baseline", async () => {
    const outDir = await tempDir("svc-conformance-");
    const r = await run(["server", "--url", `${s.url}/mcp`, "--expected-failures", baseline, "-o", outDir]);
    const plain = r.out.replace(/\x1b\[[0-9;]*m/g, "");
    const summary = plain.slice(plain.indexOf("=== SUMMARY ==="));
    const lines = summary.split("\n").filter((l) => /^[✓✗]|^Total|expected|unexpected|stale|baseline/i.test(l.trim()));
    await writeFile(
      path.join(outDir, "conformance-result.md"),
      [
        "# MCP conformance of svc's /mcp",
        "",
        "Written by test/mcp/conformance.test.ts: `node node_modules/@modelcontextprotocol/conformance/dist/index.js server --url http://127.0.0.1:PORT/mcp --expected-failures test/mcp/conformance-expected-failures.yml`",
        "(@modelcontextprotocol/conformance 0.1.13; the expected failures and why are explained in conformance-expected-failures.yml).",
        "",
        `Exit code: ${r.code} (0 = every failure is in the baseline and every baseline entry still fails)`,
        "",
        "```",
        ...lines,
        "```",
        "",
      ].join("\n"),
    );
    process.stdout.write(`MCP conformance summary: ${path.join(outDir, "conformance-result.md")}\n`);
    expect(summary).toContain("server-initialize: 1 passed, 0 failed");
    expect(summary).toContain("tools-list: 1 passed, 0 failed");
    expect(summary).toMatch(/dns-rebinding-protection: \d+ passed, 0 failed/);
    expect(r.code, r.out.slice(-3000)).toBe(0);
  });
});
