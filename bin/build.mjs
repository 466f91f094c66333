#!/usr/bin/env node
// `npm run build` (also `prepare`, which `npm ci` runs, and `pretest`): compile svc's TypeScript
// into dist/, one .js file (plus source map) per .ts file, mirroring the tree, so that `svc` starts
// without compiling anything at run time and still loads only the modules a command imports.
//
// The sources import each other without extensions (`moduleResolution: Bundler`), which Node's ESM
// loader cannot resolve; each relative import is rewritten here to the file it names (`./x` ->
// `./x.js` or `./x/index.js`) and left external, packages stay external too.
//
// Modules read files next to themselves (package.json, console/, examples/quickstart, migrations,
// .lua scripts, worker .mjs files) through `import.meta.url`. In dist/ each module's
// `import.meta.url` is the URL of the source file it was compiled from, so those reads find the
// package's files where they are, with nothing copied (and nothing to go stale).
// Types are not checked here: `npm run typecheck` (tsc --noEmit) does that.
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { buildLlamaVendor, LLAMA } from "./vendor-llama.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const dist = path.join(root, "dist");
// built beside dist/ (same depth, so every relative path is the same) and swapped in at the end:
// a test or command running meanwhile never sees half a build
const outdir = path.join(root, `.dist-build-${process.pid}`);
const STAMP = ".built-from";
const SOURCES = ["api", "boot", "cli", "controllers", "engines", "manifests", "schemas", "prisma"];

/** Every .ts file under the source folders (the generated Prisma clients included). */
function sources() {
  const out = [];
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith(".ts") && !e.name.endsWith(".d.ts")) out.push(p);
    }
  };
  for (const d of SOURCES) walk(path.join(root, d));
  return out;
}

/** The file an extensionless relative import names, as the path to write in dist/, or null. */
function compiledPath(spec, importer) {
  const base = path.resolve(path.dirname(importer), spec);
  const tries = [
    [`${base}.ts`, `${spec}.js`],
    [path.join(base, "index.ts"), `${spec.replace(/\/$/, "")}/index.js`],
  ];
  for (const [file, out] of tries) if (existsSync(file)) return out;
  // an import that already names a file (.mjs worker helpers, .json): kept as written
  if (existsSync(base) && statSync(base).isFile()) return spec;
  return null;
}

const SRC_URL = "__svcSourceUrl";

// Packages made of hundreds of small modules (TypeBox: ~250 files) or required file by file
// (ajv) cost more to load than to run: each is bundled once into dist/vendor/ (shared code in
// common chunks, so one copy of each), and svc's imports of them point there. The names each
// exports are read from the package itself, so an import of a new name keeps working.
const VENDOR = ["@sinclair/typebox", "@sinclair/typebox/value", "ajv", "ajv/dist/2020.js", "ajv-formats", "yaml", "js-yaml"];
const vendorFile = (spec) => path.join(outdir, "vendor", `${spec.replace(/\.js$/, "").replace(/[@/]/g, (c) => (c === "/" ? "__" : ""))}.js`);

async function vendorEntry(spec) {
  const names = Object.keys(await import(spec)).filter((n) => n !== "default" && /^[A-Za-z_$][\w$]*$/.test(n));
  const mod = await import(spec);
  return [names.length ? `export { ${names.join(", ")} } from ${JSON.stringify(spec)};` : "", "default" in mod ? `export { default } from ${JSON.stringify(spec)};` : ""].join("\n");
}

async function buildVendor(esbuild) {
  const entries = Object.fromEntries(await Promise.all(VENDOR.map(async (spec) => [spec, await vendorEntry(spec)])));
  await esbuild.build({
    entryPoints: VENDOR.map((spec) => ({ in: `vendor-entry:${spec}`, out: path.relative(path.join(outdir, "vendor"), vendorFile(spec)).replace(/\.js$/, "") })),
    outdir: path.join(outdir, "vendor"),
    bundle: true,
    splitting: true,
    format: "esm",
    // CommonJS packages that require Node's own modules get a real require
    banner: { js: 'import { createRequire as __svcCreateRequire } from "node:module"; const require = __svcCreateRequire(import.meta.url);' },
    platform: "node",
    target: "node20",
    // comments and indentation out (names kept): V8 holds each module's source for as long as it
    // runs, and a comment with a character past U+00FF (js-yaml's) doubles it (issue 43)
    minifyWhitespace: true,
    logLevel: "warning",
    plugins: [
      {
        name: "svc-vendor-entries",
        setup(build) {
          build.onResolve({ filter: /^vendor-entry:/ }, (args) => ({ path: args.path.slice("vendor-entry:".length), namespace: "vendor-entry" }));
          build.onLoad({ filter: /.*/, namespace: "vendor-entry" }, (args) => ({ contents: entries[args.path], resolveDir: root, loader: "js" }));
        },
      },
    ],
  });
}

const mirror = {
  name: "svc-mirror",
  setup(build) {
    build.onResolve({ filter: /^[@a-z]/ }, (args) => {
      if (!VENDOR.includes(args.path) && args.path !== LLAMA) return undefined; // other packages: external, as imported
      let rel = path.relative(path.dirname(distFile(args.importer)), vendorFile(args.path)).split(path.sep).join("/");
      if (!rel.startsWith(".")) rel = `./${rel}`;
      return { path: rel, external: true };
    });
    build.onResolve({ filter: /^\.\.?(\/|$)/ }, (args) => {
      if (args.kind === "entry-point") return undefined;
      const out = compiledPath(args.path, args.importer);
      if (!out) return { errors: [{ text: `cannot resolve ${args.path} from ${path.relative(root, args.importer)}` }] };
      return { path: out, external: true };
    });
    build.onLoad({ filter: /\.ts$/ }, async (args) => {
      let text = await readFile(args.path, "utf8");
      if (text.includes("import.meta.url")) {
        // prepended on line 1 so that source-map lines stay the source's lines
        const fromDist = path.relative(path.dirname(distFile(args.path)), args.path).split(path.sep).join("/");
        text = `const ${SRC_URL} = new URL(${JSON.stringify(fromDist)}, import.meta.url).href; ` + text.replaceAll("import.meta.url", SRC_URL);
      }
      if (/\/prisma\/generated[^/]*\/internal\/class\.ts$/.test(args.path)) text = queryCompilerFromFile(text, args.path);
      return { contents: text, loader: "ts" };
    });
  },
};

// The generated Prisma clients import their query compiler as a module holding it in base64,
// which stays in the heap for good; prisma/query-compiler-wasm.ts loads it and lets it go. A
// generated client that no longer has this shape fails the build rather than silently costing 5 MB.
const WASM_IMPORT = /const \{ wasm \} = await import\("@prisma\/client\/runtime\/query_compiler_bg\.(sqlite|postgresql)\.wasm-base64\.mjs"\)\s*\n\s*return await decodeBase64AsWasm\(wasm\)/;
function queryCompilerFromFile(text, file) {
  const m = WASM_IMPORT.exec(text);
  if (!m) throw new Error(`${path.relative(root, file)}: the query compiler's import has changed shape; update WASM_IMPORT in bin/build.mjs`);
  // one line, so that source-map lines stay the source's lines
  return text.replace(m[0], `return (await import("../../query-compiler-wasm")).queryCompilerWasm(${JSON.stringify(m[1])})`);
}

function distFile(src) {
  return path.join(outdir, path.relative(root, src)).replace(/\.ts$/, ".js");
}

/** What the build is made from: every source's path and mtime, the build script and package.json. */
function fingerprint(files) {
  return [...files, path.join(root, "package.json"), fileURLToPath(import.meta.url), fileURLToPath(new URL("./kind-validators.mjs", import.meta.url)), fileURLToPath(new URL("./vendor-llama.mjs", import.meta.url))].map((f) => `${path.relative(root, f)} ${statSync(f).mtimeMs}`).join("\n");
}

const started = performance.now();
const entryPoints = sources();
const print = fingerprint(entryPoints);
// --if-stale (vitest's global setup): nothing to do when dist/ was built from these very files
if (process.argv.includes("--if-stale") && existsSync(path.join(dist, STAMP)) && readFileSync(path.join(dist, STAMP), "utf8") === print) process.exit(0);
rmSync(outdir, { recursive: true, force: true });
const esbuild = await import("esbuild");
try {
  await buildVendor(esbuild);
  await buildLlamaVendor(esbuild, root, entryPoints, vendorFile(LLAMA));
  const result = await esbuild.build({
    entryPoints,
    outdir,
    outbase: root,
    bundle: true,
    packages: "external",
    format: "esm",
    platform: "node",
    target: "node20",
    sourcemap: "linked",
    sourcesContent: false,
    logLevel: "warning",
    plugins: [mirror],
  });
  if (result.errors.length) throw new Error("the build failed");
  // the manifest kinds' validators, compiled ahead of time from the schemas just built
  await (await import("./kind-validators.mjs")).writeKindValidators(root, outdir);
  writeFileSync(path.join(outdir, STAMP), print);
  rmSync(dist, { recursive: true, force: true });
  renameSync(outdir, dist);
} finally {
  rmSync(outdir, { recursive: true, force: true });
}
process.stderr.write(`svc: compiled ${entryPoints.length} files into dist/ in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
