// Prisma's query compiler ships as WebAssembly inside a JavaScript module (a 2.5 MB base64
// string). The generated client imports that module, so the module's source and its string stay
// in the heap for the life of the process (5 MB) after the one decode that needs them. bin/build.mjs
// points the generated clients here instead: the module is required once, decoded, and dropped
// from the require cache, so both strings are collected (issue 43, memory at rest). Required, the
// module stayed reachable from the requiring module's `children` (the require cache is not the
// only reference), so the base64 text is read from the file as text when it has the known layout.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
// Node's global, which this project's TypeScript libs declare as types only
const wasmApi = (globalThis as unknown as { WebAssembly: { compile(bytes: Uint8Array): Promise<WebAssembly.Module> } }).WebAssembly;

/** The compiled query compiler for `provider` ("sqlite" or "postgresql"). */
export async function queryCompilerWasm(provider: "sqlite" | "postgresql"): Promise<WebAssembly.Module> {
  const file = require.resolve(`@prisma/client/runtime/query_compiler_bg.${provider}.wasm-base64.js`);
  return wasmApi.compile(Buffer.from(base64Of(file), "base64"));
}

/** The module's `wasm` string: read from its text (`const wasm = "…"`), else by running it. */
function base64Of(file: string): string {
  const text = readFileSync(file, "utf8");
  const m = /^const wasm = "([A-Za-z0-9+/=]+)";/.exec(text);
  if (m) return m[1]!;
  try {
    return (require(file) as { wasm: string }).wasm;
  } finally {
    delete require.cache[file];
  }
}
