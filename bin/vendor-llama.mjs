// node-llama-cpp bundled into dist/vendor/node-llama-cpp.js for bin/build.mjs (issue 43, memory
// with a model loaded). Its index loads ~400 modules (its CLI, downloader, git and build helpers
// among them) whose compiled code stays resident: ~35 MB at import. One tree-shaken bundle holding
// only the names svc's sources import costs ~17 MB; svc's imports of the package point to it.
//
// node-llama-cpp finds its prebuilt binaries and llama/ folder from each module's
// `import.meta.url`, so each is replaced by the URL of the file it came from, resolved at run time
// from wherever the package is installed. Its platform builds (@node-llama-cpp/*), native addons
// and optional native helpers stay external and load as they did.
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
  await esbuild.build({
    stdin: { contents: `export { ${names.join(", ")} } from "${LLAMA}";`, resolveDir: root, loader: "js" },
    outfile: outFile,
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node20",
    // half the source text V8 keeps for lazy compilation (~1 MB); names kept for stack traces
    // and for code that reads a class's or function's name
    minify: true,
    keepNames: true,
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
        name: "svc-llama-urls",
        setup(build) {
          build.onLoad({ filter: /[\\/]node-llama-cpp[\\/]dist[\\/].*\.js$/ }, async (args) => {
            let text = await readFile(args.path, "utf8");
            const rel = path.relative(pkgDist, args.path).split(path.sep).join("/");
            if (text.includes("import.meta.url")) text = text.replaceAll("import.meta.url", `new URL(${JSON.stringify(rel)}, ${PKG_URL}).href`);
            return { contents: text, loader: "js" };
          });
        },
      },
    ],
  });
}
