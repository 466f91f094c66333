// Memory with a model loaded (issue 43): svc loads node-llama-cpp as one tree-shaken bundle
// (bin/vendor-llama.mjs), not the package's ~400 modules. Every compiled import of the package
// points to the bundle, which exports every name the sources import and finds the package's
// files (prebuilt binaries, llama/) where it is installed. young-gen.test.ts and the inference
// tests run models through it.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs script without declarations
import { llamaNames } from "../../bin/vendor-llama.mjs";
import { repoRoot } from "../helpers/cli";

const dist = path.join(repoRoot, "dist");
const js = (dir: string) => readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".js")).map((f) => path.join(dir, f));
const ts = (dir: string) => readdirSync(path.join(repoRoot, dir), { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts")).map((f) => path.join(repoRoot, dir, f));

describe("node-llama-cpp in dist/", () => {
  it("is imported from dist/vendor/node-llama-cpp.js only, which exports every name the sources use", () => {
    const direct = js(dist).filter((f) => !f.includes(`${path.sep}vendor${path.sep}`) && /(?:from\s*|import\(\s*)"node-llama-cpp"/.test(readFileSync(f, "utf8")));
    expect(direct.map((f) => path.relative(dist, f))).toEqual([]);
    const names: string[] = llamaNames(["engines", "api", "boot", "cli", "controllers"].flatMap(ts));
    expect(names).toEqual(expect.arrayContaining(["getLlama", "LlamaChat", "createModelDownloader"]));
    // the bundle's export statement, read rather than imported (importing it costs seconds here)
    const exported = /\bexport ?\{([^}]*)\};\s*(?:\/\*|$)/.exec(readFileSync(path.join(dist, "vendor/node-llama-cpp.js"), "utf8"))?.[1] ?? "";
    expect(exported.split(",").map((n) => n.trim().split(/\s+as\s+/).pop()).filter(Boolean).sort()).toEqual(names);
  });

  it("resolves the package's own files from where it is installed", () => {
    const text = readFileSync(path.join(dist, "vendor/node-llama-cpp.js"), "utf8");
    // import.meta.url is the bundle's own only in its first line (its `require`)
    expect(text.split("import.meta.url").length - 1).toBe(1);
    expect(text).toMatch(/new URL\("bindings\/[\w/]+\.js", ?__svcLlamaIndexUrl\)/);
  });

  it("leaves out node-llama-cpp's terminal displays and keepNames' per-function calls (memory with a model loaded)", () => {
    const text = readFileSync(path.join(dist, "vendor/node-llama-cpp.js"), "utf8");
    // the stand-ins of ora, stdout-update and slice-ansi, and none of their code (stdout-update's UpdateManager)
    expect(text.match(/is left out of svc's bundle of node-llama-cpp/g)).toHaveLength(3);
    expect(text).not.toContain("UpdateManager");
    // keepNames' helper, `(fn, name) => defineProperty(fn, "name", { value: name, configurable: true })`
    expect(text).not.toMatch(/\([\w$]+,[\w$]+\)=>[\w$]+\([\w$]+,"name",\{value:[\w$]+,configurable:!0\}\)/);
  });
});
