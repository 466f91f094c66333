// node's start-up flags for svc, and glibc's malloc settings (issue 43, memory at rest: bin/svc.mjs
// says why), live on the bin's first line; `npm start`, examples/deploy's image and its Kubernetes Deployment pass the same ones, and the `svc` command
// (the bin run as a program, as npm links it) starts with them.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../helpers/cli";

const read = (f: string) => readFileSync(path.join(repoRoot, f), "utf8");
const shebang = read("bin/svc.mjs").split("\n", 1)[0]!;
const line = /^#!\/usr\/bin\/env -S((?: \w+=\d+)*) node((?: --[\w-]+)+)$/.exec(shebang);
const flags = line?.[2]?.trim() ?? "";
// glibc's malloc settings before `node` (bin/svc.mjs says why)
const env = (line?.[1]?.trim().split(" ") ?? []).filter(Boolean).map((kv) => kv.split("=") as [string, string]);

describe("svc's node flags", () => {
  it("are on the bin's first line, in npm start and in the deploy examples", () => {
    expect(flags, shebang).toContain("--no-concurrent-recompilation");
    expect(env.map(([k]) => k), shebang).toContain("MALLOC_TRIM_THRESHOLD_");
    // npm start keeps a value the user set (sh's ${NAME:-default}); the image sets it with ENV
    const prefix = env.map(([k, v]) => `${k}=\${${k}:-${v}} `).join("");
    expect(JSON.parse(read("package.json")).scripts.start).toBe(`${prefix}node ${flags} bin/svc.mjs serve`);
    for (const [k, v] of env) expect(read("examples/deploy/Dockerfile")).toMatch(new RegExp(`^ENV ${k}=${v}$`, "m"));
    const cmd = JSON.parse(/^CMD (\[.*\])$/m.exec(read("examples/deploy/Dockerfile"))?.[1] ?? "[]");
    expect(cmd.slice(0, 2 + flags.split(" ").length)).toEqual(["node", ...flags.split(" "), "bin/svc.mjs"]);
    const k8s = /^\s*command: (\[.*\])$/m.exec(read("examples/deploy/kubernetes/deployment.yaml"))?.[1] ?? "[]";
    expect(JSON.parse(k8s)).toEqual(["node", ...flags.split(" "), "bin/svc.mjs"]);
  });

  it("the bin runs as a program with them", () => {
    const out = execFileSync(path.join(repoRoot, "bin/svc.mjs"), ["version"], { cwd: repoRoot, encoding: "utf8" });
    expect(out).toMatch(/^svc \d+\.\d+\.\d+/);
  });
});
