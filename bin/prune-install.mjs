#!/usr/bin/env node
// Run by `npm ci` / `npm install` (postinstall, after the Prisma clients are generated): removes
// from node_modules files that svc can never load, which were ~160 MB of a default install
// (issue 43). Each rule names one package's files and why svc does not need them:
// - @prisma/client's runtime ships a client, a query engine and a query compiler for every
//   database and every JavaScript runtime, with source maps. svc's generated clients
//   (engineType "client") load runtime/client and the query compiler of SQLite and PostgreSQL
//   only; the type declarations are all kept (tsc reads them). Without the .map files Node also
//   keeps no source map of Prisma's runtime in a server's memory.
//   The Prisma CLI carries a second copy of that runtime (prisma/prisma-client) and the engines of
//   every database for its own commands; svc runs them for SQLite and PostgreSQL only.
// - TypeScript sources that packages ship beside their compiled JavaScript, which Node never
//   loads (their package exports name the compiled files): effect (the Prisma CLI's config
//   loader), and the SDKs the tests use (@anthropic-ai/sdk, openai).
// - node-llama-cpp's llama/gitRelease.bundle is the llama.cpp source tree (34 MB), read only to
//   compile llama.cpp from source; svc runs node-llama-cpp's prebuilt binaries (a source build,
//   if one is ever needed, downloads the sources instead).
// - better-sqlite3 compiled from source leaves its object files beside the addon.
// - gpt-tokenizer ships its encodings three times: svc imports the ES modules (esm/); the
//   CommonJS copy (cjs/), the TypeScript sources (src/) and the raw .tiktoken files (data/) are
//   never read (svc is an ES module package and nothing else depends on gpt-tokenizer).
// SVC_KEEP_INSTALL=1 skips it. It never fails an install: a file it cannot remove is reported.
import { existsSync, readdirSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** @prisma/client's runtime files svc's generated clients never load (type declarations kept) */
function unusedPrismaRuntime(n) {
  if (/\.d\.m?ts$/.test(n)) return false;
  return /\.map$/.test(n) || /^query_engine_bg\./.test(n) || /^query_compiler_bg\.(cockroachdb|mysql|sqlserver)\./.test(n) || /^(edge|edge-esm|react-native|wasm-engine-edge|wasm-compiler-edge|binary|library)\.m?js$/.test(n);
}

/** [folder under node_modules, test on a file or folder name in it] */
export const RULES = [
  ["@prisma/client/runtime", unusedPrismaRuntime],
  ["prisma/prisma-client/runtime", unusedPrismaRuntime],
  ["prisma/build", (n) => /^query_(engine|compiler)_bg\.(cockroachdb|mysql|sqlserver)\.wasm$/.test(n)],
  ["effect", (n) => n === "src"],
  ["@anthropic-ai/sdk", (n) => n === "src"],
  ["openai", (n) => n === "src"],
  ["node-llama-cpp/llama", (n) => n === "gitRelease.bundle"],
  ["better-sqlite3/build/Release", (n) => n === "obj" || n === "obj.target" || n === ".deps"],
  ["gpt-tokenizer", (n) => n === "cjs" || n === "src" || n === "data"],
];

function size(p) {
  const s = statSync(p);
  return s.isDirectory() ? readdirSync(p).reduce((n, e) => n + size(path.join(p, e)), 0) : s.size;
}

/** Removes what RULES name under `modules`; returns the bytes freed. */
export function prune(modules, warn = (m) => process.stderr.write(`${m}\n`)) {
  let freed = 0;
  for (const [dir, matches] of RULES) {
    const d = path.join(modules, dir);
    if (!existsSync(d)) continue;
    for (const name of readdirSync(d)) {
      if (!matches(name)) continue;
      const p = path.join(d, name);
      try {
        const n = size(p);
        rmSync(p, { recursive: true, force: true });
        freed += n;
      } catch (e) {
        warn(`svc: could not remove ${path.relative(modules, p)}: ${e?.message ?? e}`);
      }
    }
  }
  return freed;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url) && process.env.SVC_KEEP_INSTALL !== "1") {
  const freed = prune(path.join(root, "node_modules"));
  if (freed) process.stderr.write(`svc: removed ${(freed / 1024 / 1024).toFixed(0)} MB of node_modules svc never loads (bin/prune-install.mjs; SVC_KEEP_INSTALL=1 keeps them)\n`);
}
