// node-llama-cpp bundled into dist/vendor/node-llama-cpp.js for bin/build.mjs (issue 43, memory
// with a model loaded). Its index loads ~400 modules (its CLI, downloader, git and build helpers
// among them) whose compiled code stays resident: ~35 MB at import. One tree-shaken bundle holding
// only the names svc's sources import costs ~17 MB; svc's imports of the package point to it.
//
// node-llama-cpp finds its prebuilt binaries and llama/ folder from each module's
// `import.meta.url`, so each is replaced by the URL of the file it came from, resolved at run time
// from wherever the package is installed. Its platform builds (@node-llama-cpp/*), native addons
// and optional native helpers stay external and load as they did.
//
// Three more cuts, ~4 MB resident and ~2 MB of heap with a model loaded (bench footprint's model row):
// - No `keepNames`: its `__name(fn, "x")` call per function and class gave each an own `name`
//   property (a map and a property array each). Nothing bundled reads a function's or class's
//   name (chat wrappers carry `wrapperName`); `assertNoNameReads` fails the build if that changes.
// - node-llama-cpp's live terminal displays (ora spinners, stdout-update progress bars, slice-ansi)
//   are left out: its `useCiLogs` switch is set, so its progress is plain status lines, as under
//   CI, and the left-out packages' stand-ins throw if anything still calls them. A server writes
//   log lines, not spinners; the displays served its CLI's source builds and downloads.
// - fs-extra wrapped once as an ES module (the `svc-cjs-once` plugin below).
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";

export const LLAMA = "node-llama-cpp";
const PKG_URL = "__svcLlamaIndexUrl";

/** The runtime (non-type) names imported or re-exported from node-llama-cpp by `files`, dynamic
 * imports (`const { x } = await import("node-llama-cpp")`) included. */
export function llamaNames(files) {
  const names = new Set();
  const re = /(?:import|export|const)\s*(type\s*)?\{([^}]*)\}\s*(?:from\s*|=\s*await\s+import\(\s*)"node-llama-cpp"/g;
  for (const f of files) {
    const text = readFileSync(f, "utf8");
    const parsed = [...text.matchAll(re)];
    // an import of another shape (`const m = await import(…)`) would miss names: fail the build
    if (parsed.length !== [...text.matchAll(/(?:from\s*|import\(\s*)"node-llama-cpp"/g)].length) {
      throw new Error(`${f}: import node-llama-cpp's names as \`import { … } from\` or \`const { … } = await import(…)\` (bin/vendor-llama.mjs reads them)`);
    }
    for (const m of parsed) {
      if (m[1]) continue; // `import type { … }`
      for (const part of m[2].split(",")) {
        const name = part.trim().split(/\s+as\s+|\s*:\s*/)[0].trim();
        if (name && !name.startsWith("type ")) names.add(name);
      }
    }
  }
  return [...names].sort();
}

/** Bundles the names `files` use from node-llama-cpp into `outFile` (no bundle when none is used). */
export async function buildLlamaVendor(esbuild, root, files, outFile) {
  const names = llamaNames(files);
  if (!names.length) return;
  const req = createRequire(path.join(root, "package.json"));
  const index = req.resolve(LLAMA); // …/node-llama-cpp/dist/index.js
  const pkgDist = path.dirname(index);
  const result = await esbuild.build({
    stdin: { contents: `export { ${names.join(", ")} } from "${LLAMA}";`, resolveDir: root, loader: "js" },
    outfile: outFile,
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node20",
    // half the source text V8 keeps for lazy compilation (~1 MB); without keepNames (see the top)
    minify: true,
    metafile: true,
    logLevel: "warning",
    external: ["@node-llama-cpp/*", "@reflink/*", "*.node"],
    banner: {
      js: [
        'import { createRequire as __svcCreateRequire } from "node:module";',
        'import { pathToFileURL as __svcFileUrl } from "node:url";',
        "const require = __svcCreateRequire(import.meta.url);",
        `const ${PKG_URL} = __svcFileUrl(require.resolve("${LLAMA}")).href;`,
      ].join(" "),
    },
    plugins: [
      {
        // fs-extra (CommonJS, ~200 exports) is imported by ~40 of the package's modules; esbuild
        // gives each importing module its own ES-module copy of it, a getter closure per export
        // (~5,000 closures kept for good). One ES-module wrapper, imported by all, makes one copy.
        name: "svc-cjs-once",
        setup(build) {
          build.onResolve({ filter: CJS_ONCE }, (args) => (args.namespace === "svc-cjs-once" ? undefined : { path: args.path, namespace: "svc-cjs-once", pluginData: args.resolveDir }));
          build.onLoad({ filter: /.*/, namespace: "svc-cjs-once" }, (args) => ({ contents: `import m from ${JSON.stringify(args.path)}; export default m;`, resolveDir: args.pluginData, loader: "js" }));
        },
      },
      {
        name: "svc-llama-displays-left-out",
        setup(build) {
          build.onResolve({ filter: LEFT_OUT }, (args) => ({ path: args.path, namespace: "svc-left-out" }));
          build.onLoad({ filter: /.*/, namespace: "svc-left-out" }, (args) => ({ contents: leftOut(args.path), loader: "js" }));
        },
      },
      {
        name: "svc-llama-urls",
        setup(build) {
          build.onLoad({ filter: /[\\/]node-llama-cpp[\\/]dist[\\/].*\.js$/ }, async (args) => {
            let text = await readFile(args.path, "utf8");
            const rel = path.relative(pkgDist, args.path).split(path.sep).join("/");
            if (text.includes("import.meta.url")) text = text.replaceAll("import.meta.url", `new URL(${JSON.stringify(rel)}, ${PKG_URL}).href`);
            if (rel === "config.js") text = ciLogs(text);
            return { contents: text, loader: "js" };
          });
        },
      },
    ],
  });
  assertNoNameReads(result.metafile);
}

/** CommonJS packages imported (default import) by many of the package's modules. */
const CJS_ONCE = /^fs-extra$/;

/** The terminal-display packages left out of the bundle (see the top of this file). */
const LEFT_OUT = /^(ora|stdout-update|slice-ansi)$/;

/** A left-out package's stand-in: any call of it, or construction, is an error that names it. */
function leftOut(name) {
  const message = `${name} (a terminal display) is left out of svc's bundle of node-llama-cpp, whose progress is written as plain lines`;
  return `module.exports = function leftOut() { throw new Error(${JSON.stringify(message)}); };`;
}

/** node-llama-cpp's config.js with `useCiLogs` on: its withOra/withProgressLog print status lines
 * and never reach the left-out displays. A package update that renames it fails the build. */
function ciLogs(text) {
  const re = /export const useCiLogs = [^;\n]+;/;
  if (!re.test(text)) throw new Error("bin/vendor-llama.mjs: node-llama-cpp's config.js no longer declares `export const useCiLogs = …;`: check how its terminal displays are chosen");
  return text.replace(re, "export const useCiLogs = true;");
}

/** Fails the build when a bundled module reads a function's or class's name, which minifying
 * without keepNames would change. */
function assertNoNameReads(metafile) {
  const reads = /\bconstructor\.name\b|\bnew\.target\.name\b/;
  const found = Object.keys(metafile.inputs).filter((f) => !f.startsWith("<") && !f.includes(":") && reads.test(readFileSync(f, "utf8")));
  if (found.length) throw new Error(`bin/vendor-llama.mjs: ${found.join(", ")} read a function's name; the bundle is minified without keepNames`);
}
