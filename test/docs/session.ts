// Runs doc blocks as a reader would, in one bash session, inside a network namespace the test
// makes (only its own loopback: the fixed ports of the docs, 1337 and 8081, are always free there,
// and nothing can leave the machine). HOME is a fresh temp dir, so `~/.svc` starts empty.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { repoRoot } from "../helpers/cli";
import type { Block } from "./blocks";

/** Why a namespace cannot be made here, or null when it can. */
export function netnsUnavailable(): string | null {
  if (process.getuid?.() !== 0) return "needs root to create a network namespace (ip netns add)";
  const r = spawnSync("ip", ["netns", "list"], { encoding: "utf8" });
  if (r.error || r.status !== 0) return `ip netns does not work here: ${r.error?.message ?? r.stderr}`;
  return null;
}

const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** The bash script: each block in order, its output kept in out/N.txt and echoed to the log. */
export function scriptOf(blocks: Block[], dir: string): string {
  const lines = [
    "set -uo pipefail",
    "export npm_config_update_notifier=false",
    "bg=()",
    "cleanup() { for p in \"${bg[@]}\"; do kill -TERM -- -\"$p\" 2>/dev/null; done; sleep 1; for p in \"${bg[@]}\"; do kill -KILL -- -\"$p\" 2>/dev/null; done; }",
    "trap cleanup EXIT",
    "fail() { echo \"DOCTEST FAILED: $*\"; exit 1; }",
    // what `npm link` gives a reader: the svc command (pages write `svc …`)
    `svc() { node ${q(path.join(repoRoot, "bin/svc.mjs"))} "$@"; }`,
    "export -f svc",
    "waitfor() { for i in $(seq 1 240); do curl -sf -o /dev/null \"$1\" && return 0; sleep 0.5; done; return 1; }",
  ];
  blocks.forEach((b, n) => {
    const where = `${b.file}:${b.line}`;
    // installing or running the suite from inside the suite would replace the packages under it
    if (/\bnpm\s+(ci|install|i|test)\b/.test(b.code)) throw new Error(`${where}: a block that runs npm ci/install/test must be marked skip`);
    const code = path.join(dir, `block-${n}.${b.lang === "js" ? "mjs" : "sh"}`);
    const out = path.join(dir, `out-${n}.txt`);
    writeFileSync(code, b.code);
    lines.push(`echo "=== ${where} (${b.lang})"`);
    if (b.marker.background) {
      lines.push(`setsid bash ${q(code)} > ${q(out)} 2>&1 & bg+=($!)`);
      lines.push(`waitfor ${q(b.marker.background)} || { cat ${q(out)}; fail ${q(`${where}: ${b.marker.background} did not answer`)}; }`);
      return;
    }
    if (b.lang === "js") lines.push(`node ${q(code)} > ${q(out)} 2>&1; st=$?`);
    else lines.push(`{ source ${q(code)}; } > ${q(out)} 2>&1; st=$?`);
    lines.push(`cat ${q(out)}; echo`);
    lines.push(`[ "$st" -eq 0 ] || fail ${q(`${where}: exit status`)} "$st"`);
    if (b.marker.expect !== undefined) lines.push(`grep -qF -- ${q(b.marker.expect)} ${q(out)} || fail ${q(`${where}: the output lacks ${b.marker.expect}`)}`);
  });
  lines.push("echo DOCTEST OK");
  return lines.join("\n") + "\n";
}

/** Run the blocks in a fresh namespace and HOME; returns the whole log and whether all passed. */
export async function runSession(blocks: Block[]): Promise<{ ok: boolean; log: string }> {
  const dir = mkdtempSync(path.join(process.env.SVC_TEST_ROOT ?? os.tmpdir(), "svc-doctest-"));
  const home = path.join(dir, "home");
  execFileSync("mkdir", ["-p", home]);
  // a js block saved "in this folder" imports openai: give the temp dir the repository's packages
  symlinkSync(path.join(repoRoot, "node_modules"), path.join(dir, "node_modules"));
  const script = path.join(dir, "session.sh");
  writeFileSync(script, scriptOf(blocks, dir));
  const ns = `svc-doctest-${process.pid}`;
  execFileSync("ip", ["netns", "add", ns]);
  try {
    execFileSync("ip", ["netns", "exec", ns, "ip", "link", "set", "lo", "up"]);
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: home };
    delete env.SVC_TEST_ROOT; // the docs say ~/.svc: HOME is the fresh temp dir here
    delete env.SVC_HOME;
    delete env.SVC_PORT;
    // asynchronous: the test worker must keep answering vitest while the session runs
    const child = spawn("ip", ["netns", "exec", ns, "bash", script], { cwd: repoRoot, env, stdio: ["ignore", "pipe", "pipe"] });
    let log = "";
    child.stdout.on("data", (c) => (log += c));
    child.stderr.on("data", (c) => (log += c));
    const killer = setTimeout(() => child.kill("SIGKILL"), 240_000);
    const status = await new Promise<number | null>((resolve) => child.on("close", resolve));
    clearTimeout(killer);
    return { ok: status === 0 && log.includes("DOCTEST OK"), log };
  } finally {
    spawnSync("ip", ["netns", "del", ns]);
  }
}
