// The layering is held by a tool, not by memory: .dependency-cruiser.cjs (npm run lint:deps, run
// by CI on the real tree) refuses an engine package that imports one above it, a cycle between
// packages, and a package missing from its ENGINE_ORDER. Here the same configuration runs on small
// planted trees, so a rule that stopped matching would fail this test. And the repository stands
// on its own: nothing points at a design document outside it.
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../helpers/cli";

const CRUISE = path.join(repoRoot, "node_modules/dependency-cruiser/bin/dependency-cruise.mjs");

/** Run the project's dependency-cruiser configuration over a tree of `files` (path -> source). */
function cruise(files: Record<string, string>): { status: number; out: string } {
  const dir = mkdtempSync(path.join(process.env.SVC_TEST_ROOT ?? os.tmpdir(), "svc-layering-"));
  copyFileSync(path.join(repoRoot, ".dependency-cruiser.cjs"), path.join(dir, ".dependency-cruiser.cjs"));
  writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: { module: "ESNext", moduleResolution: "Bundler", strict: true } }));
  for (const [f, src] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    writeFileSync(path.join(dir, f), src);
  }
  const r = spawnSync(process.execPath, [CRUISE, "--config", ".dependency-cruiser.cjs", "engines"], { cwd: dir, encoding: "utf8" });
  return { status: r.status ?? -1, out: `${r.stdout}${r.stderr}` };
}

describe("the engine package order (npm run lint:deps)", () => {
  it("lets a package import one below it", () => {
    const r = cruise({
      "engines/errors.ts": "export const E = 1;\n",
      "engines/gateway/gate.ts": 'import { E } from "../errors";\nexport const G = E;\n',
      "engines/agents/loop.ts": 'import { G } from "../gateway/gate";\nexport const A = G;\n',
    });
    expect(r.out).toContain("no dependency violations");
    expect(r.status).toBe(0);
  });

  it("fails on a planted cycle between two packages, naming the import that goes up", () => {
    const r = cruise({
      "engines/gateway/gate.ts": 'import type { A } from "../agents/loop";\nexport type G = A | 1;\n',
      "engines/agents/loop.ts": 'import type { G } from "../gateway/gate";\nexport type A = G | 2;\n',
    });
    expect(r.status).not.toBe(0);
    expect(r.out).toContain("engine-order-gateway: engines/gateway/gate.ts → engines/agents/loop.ts");
    expect(r.out).toContain("no-cycles");
  });

  it("fails on an observer imported back by the engine it watches, and on an undeclared package", () => {
    const back = cruise({ "engines/metrics/m.ts": "export const M = 1;\n", "engines/gateway/gate.ts": 'import { M } from "../metrics/m";\nexport const G = M;\n' });
    expect(back.status).not.toBe(0);
    expect(back.out).toContain("engine-order-gateway");
    const undeclared = cruise({ "engines/newthing/n.ts": "export const N = 1;\n", "engines/gateway/gate.ts": 'import { N } from "../newthing/n";\nexport const G = N;\n' });
    expect(undeclared.status).not.toBe(0);
    expect(undeclared.out).toContain("engine-packages-declared");
  });

  it("keeps engines/svc.ts (the registry) on top and the shared files at the bottom", () => {
    const r = cruise({
      "engines/svc.ts": 'import { G } from "./gateway/gate";\nexport const S = G;\n',
      "engines/gateway/gate.ts": "export const G = 1;\n",
      "engines/errors.ts": 'import { G } from "./gateway/gate";\nexport const E = G;\n',
      "engines/agents/loop.ts": 'import { S } from "../svc";\nexport const A = S;\n',
    });
    expect(r.status).not.toBe(0);
    expect(r.out).toContain("engine-shared-files-at-the-bottom: engines/errors.ts");
    expect(r.out).toContain("engine-registry-on-top: engines/agents/loop.ts");
  });
});

describe("the repository stands on its own", () => {
  it("no tracked file points at a design document outside the repository", () => {
    const r = spawnSync("git", ["grep", "-n", "-I", "-E", "DESIGN\\.md|\\.\\./shared/", "--", ".", ":!bench/reports", ":!test/platform/layering.test.ts"], { cwd: repoRoot, encoding: "utf8" });
    const hits = r.status === 1 ? "" : `${r.stdout}${r.stderr}`; // 1: nothing found
    expect(hits).toBe("");
  });
});
