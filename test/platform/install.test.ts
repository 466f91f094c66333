// What `npm ci` installs (issue 43): the lockfile's platform builds carry the os and cpu they run
// on, so npm skips the others, and node-llama-cpp's GPU builds (~610 MB on linux-x64) are not in
// it, while its CPU build for this machine is; `npm run gpu` (bin/gpu.mjs) names the GPU builds
// of the installed node-llama-cpp, at its version; SVC_GPU picks the backend, and one that
// cannot start falls back to the CPU with a message (engines/inference/gpu.ts).
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Llama } from "node-llama-cpp";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../helpers/cli";
import { gpuChoice, startLlama } from "../../engines/inference/gpu";
// @ts-expect-error: a plain .mjs script without declarations
import { prune } from "../../bin/prune-install.mjs";

const lock = JSON.parse(readFileSync(path.join(repoRoot, "package-lock.json"), "utf8")) as { packages: Record<string, any> };
const GPU = /@node-llama-cpp\/[a-z]+-[a-z0-9]+-(cuda|cuda-ext|vulkan)$/;

describe("the lockfile", () => {
  it("holds no GPU build of node-llama-cpp, and node-llama-cpp's entry names none", () => {
    expect(Object.keys(lock.packages).filter((k) => GPU.test(k))).toEqual([]);
    expect(Object.keys(lock.packages["node_modules/node-llama-cpp"].optionalDependencies).filter((n) => GPU.test(n))).toEqual([]);
  });

  it("keeps node-llama-cpp's CPU builds, each with the one os and cpu it runs on", () => {
    const builds = Object.entries(lock.packages).filter(([k]) => k.startsWith("node_modules/@node-llama-cpp/"));
    expect(builds.map(([k]) => k)).toContain("node_modules/@node-llama-cpp/linux-x64");
    for (const [k, v] of builds) {
      expect(v.optional, k).toBe(true);
      expect(v.os?.length, `${k} os`).toBe(1);
      expect(v.cpu?.length, `${k} cpu`).toBe(1);
    }
    expect(lock.packages["node_modules/@node-llama-cpp/linux-x64"]).toMatchObject({ os: ["linux"], cpu: ["x64"] });
    expect(lock.packages["node_modules/@node-llama-cpp/linux-arm64"].cpu).toEqual(["arm64"]);
  });
});

describe("the GPU switch", () => {
  it("npm run gpu names the installed node-llama-cpp's GPU builds for this machine, at its version", () => {
    const nlc = JSON.parse(readFileSync(path.join(repoRoot, "node_modules/node-llama-cpp/package.json"), "utf8"));
    const out = execFileSync(process.execPath, [path.join(repoRoot, "bin/gpu.mjs"), "--print"], { cwd: repoRoot, encoding: "utf8" });
    if (process.platform === "linux" && process.arch === "x64") {
      const named = out.trim().split(/\s+/).filter((a) => a.startsWith("@node-llama-cpp/"));
      expect(named).toEqual(["cuda", "cuda-ext", "vulkan"].map((g) => `@node-llama-cpp/linux-x64-${g}@${nlc.version}`));
      for (const n of named) expect(nlc.optionalDependencies[n.slice(0, n.lastIndexOf("@"))]).toBe(nlc.version);
      expect(out).toMatch(/^npm install --no-save /);
    }
  });

  it("SVC_GPU takes off, auto, cuda, vulkan, metal and says which when it is something else", () => {
    expect(gpuChoice(undefined)).toBe(false);
    expect(gpuChoice("off")).toBe(false);
    expect(gpuChoice("Auto")).toBe("auto");
    expect(gpuChoice("cuda")).toBe("cuda");
    expect(() => gpuChoice("rocm")).toThrow(/SVC_GPU=rocm is not one of off, auto, cuda, vulkan, metal/);
  });

  it("a backend that cannot start falls back to the CPU with a message; no GPU found says so too", async () => {
    const calls: unknown[] = [];
    const cpu = { gpu: false } as unknown as Llama;
    const noCuda = async (o: { gpu: unknown; build?: string }) => {
      calls.push(o);
      if (o.gpu === "cuda") throw Object.assign(new Error(""), { name: "NoBinaryFoundError" });
      return cpu;
    };
    const said: string[] = [];
    expect(await startLlama(noCuda, "cuda", (m) => said.push(m))).toBe(cpu);
    expect(calls).toEqual([{ gpu: "cuda", build: "never" }, { gpu: false }]); // never a download or compile for a GPU
    expect(said).toEqual(["SVC_GPU=cuda: the cuda backend cannot start (NoBinaryFoundError); running local models on the CPU. GPU builds are installed by `npm run gpu`"]);
    said.length = 0;
    expect(await startLlama(noCuda, "auto", (m) => said.push(m))).toBe(cpu);
    expect(said).toEqual(["SVC_GPU=auto: no usable GPU found; running local models on the CPU"]);
    said.length = 0;
    await startLlama(noCuda, false, (m) => said.push(m));
    expect(said).toEqual([]); // the default says nothing
  });
});

describe("the install prune (bin/prune-install.mjs, run by postinstall)", () => {
  it("removes other databases' and runtimes' Prisma files, source maps, llama.cpp's sources, build objects and gpt-tokenizer's unused copies, and keeps what svc loads", () => {
    const nm = mkdtempSync(path.join(process.env.SVC_TEST_ROOT ?? os.tmpdir(), "svc-prune-"));
    const files = {
      gone: ["@prisma/client/runtime/client.js.map", "@prisma/client/runtime/query_engine_bg.sqlite.mjs", "@prisma/client/runtime/query_compiler_bg.mysql.wasm-base64.js", "@prisma/client/runtime/library.js", "@prisma/client/runtime/edge.js", "@prisma/client/runtime/react-native.js", "node-llama-cpp/llama/gitRelease.bundle", "better-sqlite3/build/Release/obj/sqlite3.o", "gpt-tokenizer/cjs/encoding/o200k_base.js", "gpt-tokenizer/data/o200k_base.tiktoken", "gpt-tokenizer/src/main.ts", "prisma/prisma-client/runtime/edge.js", "prisma/build/query_engine_bg.mysql.wasm", "effect/src/index.ts", "openai/src/index.ts"],
      kept: ["@prisma/client/runtime/client.mjs", "@prisma/client/runtime/client.d.ts", "@prisma/client/runtime/library.d.ts", "@prisma/client/runtime/index-browser.js", "@prisma/client/runtime/query_compiler_bg.sqlite.mjs", "@prisma/client/runtime/query_compiler_bg.sqlite.wasm-base64.js", "@prisma/client/runtime/query_compiler_bg.postgresql.wasm-base64.mjs", "node-llama-cpp/llama/llama.cpp.info.json", "better-sqlite3/build/Release/better_sqlite3.node", "better-sqlite3/deps/sqlite3/sqlite3.c", "gpt-tokenizer/esm/encoding/o200k_base.js", "gpt-tokenizer/package.json", "prisma/build/query_compiler_bg.postgresql.wasm", "prisma/build/schema_engine_bg.wasm", "prisma/prisma-client/runtime/client.js", "effect/dist/cjs/index.js", "openai/index.mjs"],
    };
    for (const f of [...files.gone, ...files.kept]) {
      mkdirSync(path.dirname(path.join(nm, f)), { recursive: true });
      writeFileSync(path.join(nm, f), "x".repeat(10));
    }
    expect(prune(nm, (m: string) => expect.fail(m))).toBe(10 * files.gone.length);
    expect(files.gone.filter((f) => existsSync(path.join(nm, f)))).toEqual([]);
    expect(files.kept.filter((f) => !existsSync(path.join(nm, f)))).toEqual([]);
    expect(prune(nm)).toBe(0); // a second run (npm install again) finds nothing
  });

  it("runs after the Prisma clients are generated in postinstall", () => {
    const pkg = JSON.parse(readFileSync(path.join(repoRoot, "package.json"), "utf8"));
    expect(pkg.scripts.postinstall).toMatch(/prisma generate --schema prisma\/postgres\/schema\.prisma && node bin\/prune-install\.mjs$/);
  });
});
