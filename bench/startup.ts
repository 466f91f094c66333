// `npm run bench -- startup`: how long svc takes to answer, as a person or CI sees it. Each round
// runs `node -e 0` and then each command (the compiled bin/svc.mjs, as installed), so every
// command's median is paired with node's own start-up in the same run; then `svc serve` until
// /health answers, on an existing store and on a fresh one. Every round is listed.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { table, type Section } from "./report";
import { root, sleep } from "./processes";

const ROUNDS = Number(process.env.BENCH_STARTUP_ROUNDS) || 9;
const bin = path.join(root, "bin", "svc.mjs");

/** Wall time of one process run to its exit, in ms (a failure fails the bench). */
function timed(args: string[], env: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const p = spawn(process.execPath, args, { cwd: root, env: { ...process.env, NO_COLOR: "1", ...env }, stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    p.stderr!.on("data", (d) => (err += d));
    p.on("error", reject);
    p.on("close", (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(`${args.join(" ")} exited ${code}: ${err.slice(-500)}`))));
  });
}

/** `svc serve` on `home` until GET /health answers 200; ms from spawn, then stopped. */
async function serveToHealth(home: string, extra: string[]): Promise<number> {
  const t0 = performance.now();
  const p = spawn(process.execPath, [bin, "serve", "--port", "0", ...extra], { cwd: root, env: { ...process.env, SVC_HOME: home, NO_COLOR: "1" }, stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  p.stderr!.on("data", (d) => (err += d));
  const exited = new Promise<void>((r) => p.on("close", () => r()));
  try {
    for (;;) {
      if (p.exitCode !== null) throw new Error(`svc serve exited ${p.exitCode}: ${err.slice(-800)}`);
      if (performance.now() - t0 > 60_000) throw new Error(`svc serve did not answer /health within 60 s: ${err.slice(-800)}`);
      const url = /bound (http:\/\/[^\s:]+:\d+)/.exec(err)?.[1];
      if (url) {
        const ok = await fetch(`${url}/health`).then((r) => r.ok, () => false);
        if (ok) return performance.now() - t0;
      }
      await sleep(5);
    }
  } finally {
    p.kill("SIGTERM");
    await exited;
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const sec = (x: number) => `${(x / 1000).toFixed(2)} s`;

export async function startupBench(): Promise<Section> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), "svc-bench-startup-"));
  try {
    // a running svc for `config plan` (and an existing store for the offline commands)
    const home = path.join(tmp, "home");
    const running = spawn(process.execPath, [bin, "serve", "--port", "0", "--no-quickstart"], { cwd: root, env: { ...process.env, SVC_HOME: home }, stdio: ["ignore", "ignore", "pipe"] });
    let runErr = "";
    running.stderr!.on("data", (d) => (runErr += d));
    for (let i = 0; i < 600 && !/svc listening on/.test(runErr); i++) await sleep(100);
    if (!/svc listening on/.test(runErr)) throw new Error(`svc serve did not start: ${runErr.slice(-800)}`);
    const withHome = { SVC_HOME: home };
    const commands: Array<[string, string[], Record<string, string>]> = [
      ["`node -e 0`", ["-e", "0"], {}],
      ["`svc version`", [bin, "version"], {}],
      ["`svc --help`", [bin, "--help"], {}],
      ["`svc config validate examples/gateway`", [bin, "config", "validate", "examples/gateway"], {}],
      ["`svc config plan examples/gateway` (svc running)", [bin, "config", "plan", "examples/gateway"], withHome],
      ["`svc config schema`", [bin, "config", "schema"], {}],
      ["`svc config export` (svc running)", [bin, "config", "export"], withHome],
      ["`svc status` (svc running)", [bin, "status"], withHome],
      ["`svc doctor` (svc running)", [bin, "doctor"], withHome],
      ["`svc keys --help`", [bin, "keys", "--help"], {}],
      ["`svc mcp --help`", [bin, "mcp", "--help"], {}],
    ];
    const rounds: number[][] = commands.map(() => []);
    for (let r = 0; r < ROUNDS; r++) {
      for (const [i, [, args, env]] of commands.entries()) rounds[i].push(await timed(args, env));
    }
    running.kill("SIGTERM");
    await new Promise((r) => running.on("close", r));

    // serve to /health: on the store just used (existing), and on a new home each round (fresh:
    // creates and migrates the store, applies the quickstart; the model is generated after /health)
    const existing: number[] = [];
    const fresh: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      existing.push(await serveToHealth(home, ["--no-quickstart"]));
      const freshHome = path.join(tmp, `fresh-${r}`);
      fresh.push(await serveToHealth(freshHome, []));
      rmSync(freshHome, { recursive: true, force: true });
    }

    const node = median(rounds[0]);
    const summary = table(
      ["command", "median", "minus `node -e 0`"],
      [...commands.map(([name], i) => [name, sec(median(rounds[i])), i === 0 ? "" : `+${sec(median(rounds[i]) - node)}`]), ["`svc serve` to /health, existing store", sec(median(existing)), ""], ["`svc serve` to /health, fresh store", sec(median(fresh)), ""]],
    );
    const every = table(
      ["command", ...Array.from({ length: ROUNDS }, (_, r) => `round ${r + 1}`)],
      [...commands.map(([name], i) => [name, ...rounds[i].map(sec)]), ["serve to /health, existing store", ...existing.map(sec)], ["serve to /health, fresh store", ...fresh.map(sec)]],
    );
    const body = [
      `Medians of ${ROUNDS} rounds; each round runs \`node -e 0\` and then each command once, with the compiled \`bin/svc.mjs\` (dist/). \`svc serve\` is timed from spawn until GET /health answers 200 (the listener is bound before the engines load).`,
      "",
      summary,
      "",
      "Every round:",
      "",
      every,
    ].join("\n");
    return { title: "Start-up: CLI commands and svc serve to /health", body, data: { rounds: ROUNDS, commands: Object.fromEntries(commands.map(([n], i) => [n, rounds[i]])), serveExisting: existing, serveFresh: fresh } };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
