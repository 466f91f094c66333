// Issue 38, item 10: the README's commands honour SVC_HOME, its walkthrough starts svc so that
// stdout is only JSON log lines, and it says what the first start prints (the admin key).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../helpers/cli";
import { blocksOf } from "./blocks";

const blocks = blocksOf("README.md");
const runnable = blocks.filter((b) => !b.marker.skip && !b.marker.fragment && b.lang === "sh");

describe("README and SVC_HOME", () => {
  it("step 3 reads the admin key from SVC_HOME when it is set", () => {
    const step3 = runnable.find((b) => b.code.includes("ADMIN="))!;
    expect(step3).toBeDefined();
    const root = mkdtempSync(path.join(process.env.SVC_TEST_ROOT ?? os.tmpdir(), "svc-readme-home-"));
    const home = path.join(root, "elsewhere");
    execFileSync("mkdir", ["-p", home, path.join(root, "user")]);
    writeFileSync(path.join(home, "admin.key"), "sk-svc-from-svc-home\n");
    const out = execFileSync("bash", ["-c", `${step3.code}\necho "ADMIN=$ADMIN"`], { env: { PATH: process.env.PATH, HOME: path.join(root, "user"), SVC_HOME: home }, encoding: "utf8" });
    expect(out).toContain("ADMIN=sk-svc-from-svc-home");
  });

  it("no runnable block names ~/.svc without SVC_HOME", () => {
    const bare = runnable.filter((b) => /(~|\$HOME)\/\.svc/.test(b.code.replace(/\$\{SVC_HOME:-[^}]*\}/g, "")));
    expect(bare.map((b) => `README.md:${b.line}`)).toEqual([]);
  });

  it("starts svc with npm's banner off, and says what the first start prints", () => {
    const starts = runnable.filter((b) => /\bnpm start\b/.test(b.code));
    expect(starts.length).toBeGreaterThan(0);
    for (const b of starts) expect(b.code, `README.md:${b.line}`).toMatch(/npm start --silent/);
    const readme = readFileSync(path.join(repoRoot, "README.md"), "utf8");
    // the very words svc prints on first start (engines/gateway/keys.ts)
    const printed = "svc: generated the administrative API key (shown once; also in";
    expect(readFileSync(path.join(repoRoot, "engines/gateway/keys.ts"), "utf8")).toContain(printed);
    expect(readme).toContain(printed);
  });
});
