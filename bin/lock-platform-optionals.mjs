#!/usr/bin/env node
// Keeps package-lock.json installable with `npm ci` from the registry mirror this project uses.
// The mirror lacks some platform builds (e.g. @node-llama-cpp/win-x64, most @rollup/rollup-*),
// so `npm install` drops those optional dependencies from the lockfile, and `npm ci` then
// refuses the lockfile as out of sync. This adds each missing platform package back as an
// optional entry with the os/cpu/libc its name declares; npm skips it on any other platform
// and never fetches it. Run after `npm install` changes the lockfile: node bin/lock-platform-optionals.mjs
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
lock.packages = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a < b ? -1 : a > b ? 1 : 0)));
writeFileSync(file, JSON.stringify(lock, null, 2) + "\n");
console.log(`added ${added} platform-specific optional entries`);
