#!/usr/bin/env node
// Keeps package-lock.json installable with `npm ci` from the registry mirror this project uses.
// The mirror lacks some platform builds (e.g. @node-llama-cpp/win-x64, most @rollup/rollup-*),
// so `npm install` drops those optional dependencies from the lockfile, and `npm ci` then
// refuses the lockfile as out of sync. This adds each missing platform package back as an
// optional entry with the os/cpu/libc its name declares; npm skips it on any other platform
// and never fetches it. Run after `npm install` changes the lockfile: `npm run lock:platforms`.
//
// It also keeps two kinds of build out of a default install (issue 43: they were 640 MB of 1.2 GB):
// - node-llama-cpp's linux-arm64 and linux-armv7l builds declare cpu [arm64|arm, x64] (usable to
//   package for those boards from an x64 machine), so npm installed them on every x64 machine; the
//   lockfile carries the one cpu each runs on (from its name).
// - node-llama-cpp's GPU builds (CUDA, Vulkan: ~610 MB on linux-x64) are dropped from the lockfile
//   together with node-llama-cpp's optional edges to them, so `npm ci` neither installs them nor
//   finds the lockfile out of sync. svc runs models on the CPU build; GPU users add them with
//   `npm run gpu` (bin/gpu.mjs) and set SVC_GPU (README, "GPU").
import { readFileSync, writeFileSync } from "node:fs";

const OS = { win: "win32", win32: "win32", mac: "darwin", darwin: "darwin", linux: "linux", android: "android", freebsd: "freebsd", openbsd: "openbsd", openharmony: "openharmony" };
const CPU = { x64: "x64", arm64: "arm64", arm: "arm", armv7l: "arm", ia32: "ia32", riscv64: "riscv64", loong64: "loong64", ppc64: "ppc64", s390x: "s390x" };

function platformOf(name) {
  const parts = name.split("/").pop().split("-");
  const os = parts.map((p) => OS[p]).find(Boolean);
  const cpu = parts.map((p) => CPU[p]).find(Boolean);
  if (!os || !cpu) return undefined;
  const libc = parts.includes("musl") || parts.includes("musleabihf") ? "musl" : parts.some((p) => p.startsWith("gnu")) ? "glibc" : undefined;
  return { os: [os], cpu: [cpu], ...(libc && os === "linux" ? { libc: [libc] } : {}) };
}

/** node-llama-cpp's GPU builds, by name: @node-llama-cpp/<os>-<cpu>-(cuda|cuda-ext|vulkan). */
const GPU_BUILD = /^@node-llama-cpp\/[a-z]+-[a-z0-9]+-(cuda|cuda-ext|vulkan)$/;

const file = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(file, "utf8"));
let added = 0;
for (const [path, pkg] of Object.entries(lock.packages)) {
  for (const [dep, version] of Object.entries(pkg.optionalDependencies ?? {})) {
    const at = `${path ? `${path}/` : ""}node_modules/${dep}`;
    if (lock.packages[at] || lock.packages[`node_modules/${dep}`]) continue;
    const plat = platformOf(dep);
    if (!plat) continue; // not a platform build: leave it for npm to report
    lock.packages[`node_modules/${dep}`] = { version, optional: true, ...plat };
    added++;
  }
}
let dropped = 0;
for (const [path, pkg] of Object.entries(lock.packages)) {
  const name = path.replace(/^.*node_modules\//, "");
  if (GPU_BUILD.test(name)) {
    delete lock.packages[path];
    dropped++;
    continue;
  }
  for (const dep of Object.keys(pkg.optionalDependencies ?? {})) if (GPU_BUILD.test(dep)) delete pkg.optionalDependencies[dep];
  // a platform build runs on the cpu its name says, whatever else its package.json lists
  if (pkg.optional && name.startsWith("@node-llama-cpp/") && pkg.cpu?.length > 1) pkg.cpu = platformOf(name)?.cpu ?? pkg.cpu;
}
lock.packages = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a < b ? -1 : a > b ? 1 : 0)));
writeFileSync(file, JSON.stringify(lock, null, 2) + "\n");
console.log(`added ${added} platform-specific optional entries; dropped ${dropped} GPU builds`);
