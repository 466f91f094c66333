// Every code block of the README and docs/ is a test: shell and JS blocks run as a reader would
// (in order, in one session, against a fresh svc in a network namespace of its own), YAML
// manifests are validated against this build's schema, JSON must parse. A block that cannot run
// as written says so with a marker (`<!-- doctest: skip|fragment (why) -->`), which a reader sees.
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import YAML from "yaml";
import { repoRoot } from "../helpers/cli";
import { blocksOf, docFiles, type Block } from "./blocks";
import { netnsUnavailable, runSession } from "./session";

const all = docFiles().flatMap(blocksOf);
const runnable = (b: Block) => !b.marker.skip && !b.marker.fragment && (b.lang === "sh" || b.lang === "js");
const why = netnsUnavailable();
// CI runs as root: there a missing namespace is a failure, never a silent skip
const skipSession = why !== null && !process.env.CI;

describe("docs: every code block", () => {
  it("has a language the doc test knows, or says why it is not run", () => {
    const known = new Set(["sh", "js", "yaml", "json", "text", "python"]);
    const unknown = all.filter((b) => !known.has(b.lang)).map((b) => `${b.file}:${b.line} ${b.lang}`);
    expect(unknown).toEqual([]);
  });

  it("YAML manifests validate against this build's schema; JSON parses; Python and JS compile", () => {
    const dir = mkdtempSync(path.join(process.env.SVC_TEST_ROOT ?? os.tmpdir(), "svc-docblocks-"));
    const problems: string[] = [];
    all.forEach((b, n) => {
      if (b.marker.skip || b.marker.fragment) return;
      const where = `${b.file}:${b.line}`;
      try {
        if (b.lang === "json") JSON.parse(b.code);
        else if (b.lang === "yaml") {
          const docs = YAML.parseAllDocuments(b.code).map((d) => d.toJS());
          if (!docs.every((d) => d && typeof d === "object" && "apiVersion" in d)) throw new Error("not a whole manifest: add apiVersion/kind/metadata, or mark it a fragment");
          const f = path.join(dir, `block-${n}.yaml`);
          writeFileSync(f, b.code);
          execFileSync(process.execPath, [path.join(repoRoot, "bin/svc.mjs"), "config", "validate", f], { cwd: repoRoot, stdio: "pipe", encoding: "utf8" });
        } else if (b.lang === "js") {
          const f = path.join(dir, `block-${n}.mjs`);
          writeFileSync(f, b.code);
          execFileSync(process.execPath, ["--check", f], { stdio: "pipe" });
        } else if (b.lang === "python") {
          execFileSync("python3", ["-c", "import ast,sys; ast.parse(sys.stdin.read())"], { input: b.code, stdio: "pipe" });
        }
      } catch (e: any) {
        problems.push(`${where}: ${String(e?.stdout || e?.stderr || e?.message || e).trim()}`);
      }
    });
    expect(problems).toEqual([]);
  }, 120_000);

  it.skipIf(skipSession)(`the README walkthrough and the docs' shell blocks run as written${skipSession ? ` (skipped: ${why})` : ""}`, async () => {
    if (why) throw new Error(`the doc test needs a network namespace: ${why}`);
    const blocks = all.filter(runnable);
    expect(blocks.length).toBeGreaterThan(8); // the walkthrough alone has more
    const r = await runSession(blocks);
    // the whole session (each block and what it printed), for a reader who wants to see the run
    const out = path.join(mkdtempSync(path.join(process.env.SVC_TEST_ROOT ?? os.tmpdir(), "svc-docsession-")), "session.log");
    writeFileSync(out, r.log);
    process.stdout.write(`docs session log: ${out}\n`);
    if (!r.ok) throw new Error(`a doc block failed:\n${r.log.slice(-8000)}`);
    expect(r.log).toContain("Hello from the stand-in upstream.");
  }, 300_000);
});
