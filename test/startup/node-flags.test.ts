// node's start-up flags for svc and glibc's MALLOC_ARENA_MAX (issue 43, memory at rest: bin/svc.mjs
// says why) live on the bin's first line; `npm start` and examples/deploy's image (which its
// Kubernetes Deployment runs) pass the same ones (keeping a MALLOC_ARENA_MAX the user set), and the `svc` command
// (the bin run as a program, as npm links it) starts with them.
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../helpers/cli";

const read = (f: string) => readFileSync(path.join(repoRoot, f), "utf8");
const shebang = read("bin/svc.mjs").split("\n", 1)[0]!;
const [, arenas = "", found = ""] = /^#!\/usr\/bin\/env -S MALLOC_ARENA_MAX=(\d+) node((?: --[\w-]+)+)$/.exec(shebang) ?? [];
const flags = found.trim();

describe("svc's node flags", () => {
  it("are on the bin's first line, in npm start and in the deploy examples", () => {
    expect(flags, shebang).toContain("--no-concurrent-recompilation");
    expect(arenas, shebang).toBe("2");
    expect(JSON.parse(read("package.json")).scripts.start).toBe(`MALLOC_ARENA_MAX=\${MALLOC_ARENA_MAX:-${arenas}} node ${flags} bin/svc.mjs serve`);
    expect(read("examples/deploy/Dockerfile")).toMatch(new RegExp(`^ENV .*\\bMALLOC_ARENA_MAX=${arenas}\\b`, "m"));
    // the Deployment runs that image, whose ENV carries the variable (its env lists only what svc reads)
    expect(read("examples/deploy/kubernetes/deployment.yaml")).not.toMatch(/MALLOC_ARENA_MAX/);
    const cmd = JSON.parse(/^CMD (\[.*\])$/m.exec(read("examples/deploy/Dockerfile"))?.[1] ?? "[]");
    expect(cmd.slice(0, 2 + flags.split(" ").length)).toEqual(["node", ...flags.split(" "), "bin/svc.mjs"]);
    const k8s = /^\s*command: (\[.*\])$/m.exec(read("examples/deploy/kubernetes/deployment.yaml"))?.[1] ?? "[]";
    expect(JSON.parse(k8s)).toEqual(["node", ...flags.split(" "), "bin/svc.mjs"]);
  });

  it("the bin runs as a program with them", () => {
    const out = execFileSync(path.join(repoRoot, "bin/svc.mjs"), ["version"], { cwd: repoRoot, encoding: "utf8" });
    expect(out).toMatch(/^svc \d+\.\d+\.\d+/);
    // the variable reaches node itself, with no process left between (env execs node)
    const r = spawnSync(path.join(repoRoot, "bin/svc.mjs"), ["version"], { cwd: repoRoot, encoding: "utf8", env: { ...process.env, MALLOC_ARENA_MAX: undefined, NODE_OPTIONS: `--import ${path.join(repoRoot, "test/startup/malloc-env-probe.mjs")}` } });
    expect(JSON.parse(r.stdout.trim()), r.stderr).toEqual({ MALLOC_ARENA_MAX: arenas, pid: r.pid });
  });
});
