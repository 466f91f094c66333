#!/usr/bin/env node
// `npm run gpu`: add node-llama-cpp's GPU builds for this machine (CUDA and Vulkan on Linux and
// Windows x64; macOS arm64's build has Metal already). The lockfile leaves them out
// (bin/lock-platform-optionals.mjs), so a plain `npm ci` stays CPU-only and ~610 MB smaller.
// They are installed with --no-save at the exact version of the installed node-llama-cpp, so
// package.json and the lockfile stay as they are (a later `npm ci` removes them again: run this
// after it). Then start svc with SVC_GPU=auto (or cuda, vulkan); see README, "GPU".
// `node bin/gpu.mjs --print` only prints the npm command.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

const nlc = JSON.parse(readFileSync(new URL("../node_modules/node-llama-cpp/package.json", import.meta.url), "utf8"));
const platform = { linux: "linux", win32: "win", darwin: "mac" }[process.platform];
const prefix = `@node-llama-cpp/${platform}-${process.arch}-`;
const builds = Object.keys(nlc.optionalDependencies ?? {}).filter((n) => n.startsWith(prefix) && /-(cuda|cuda-ext|vulkan)$/.test(n));
if (!builds.length) {
  console.log(`node-llama-cpp ${nlc.version} has no separate GPU builds for ${process.platform}-${process.arch}; SVC_GPU=auto uses what the default build supports`);
  process.exit(0);
}
const args = ["install", "--no-save", "--no-audit", "--no-fund", ...builds.map((n) => `${n}@${nlc.version}`)];
console.log(`npm ${args.join(" ")}`);
if (!process.argv.includes("--print")) execFileSync(process.platform === "win32" ? "npm.cmd" : "npm", args, { stdio: "inherit", shell: process.platform === "win32" });
