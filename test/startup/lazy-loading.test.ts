// The compiled `svc` loads only what a command uses (issue 37): the commands a person or CI runs
// all day never load node-llama-cpp, the Prisma client or the MCP SDK, and a gateway-only server
// loads neither node-llama-cpp nor the MCP SDK. A loader hook (record-loads.mjs) writes the URL of
// every ES module the process loads, so a static import that creeps back in fails here.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../helpers/cli";
import { until } from "../helpers/http";

const HEAVY = {
  "node-llama-cpp": /\/node_modules\/node-llama-cpp\/|\/dist\/vendor\/node-llama-cpp\.js$/,
  "the Prisma client": /\/node_modules\/@prisma\/client\/|\/prisma\/generated(-pg)?\//,
  "the MCP SDK": /\/node_modules\/@modelcontextprotocol\/sdk\//,
  zod: /\/node_modules\/zod\//,
};
const hook = path.join(repoRoot, "test/startup/record-loads.mjs");
const tmp = () => mkdtempSync(path.join(process.env.SVC_TEST_ROOT ?? os.tmpdir(), "svc-loads-"));

/** Run `svc ARGS` (bin/svc.mjs, compiled) recording module loads; the URLs and the exit code. */
function recorded(args: string[], env: Record<string, string> = {}, untilLine?: RegExp): Promise<{ code: number | null; loads: string[]; out: string }> {
  const file = path.join(tmp(), "loads.txt");
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ["--import", hook, path.join(repoRoot, "bin/svc.mjs"), ...args], { cwd: repoRoot, env: { ...process.env, ...env, SVC_RECORD_LOADS: file }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    const onData = (d: Buffer) => {
      out += d;
      // a server: stopped once it says it listens (everything it loads at start is loaded then)
      if (untilLine?.test(out) && p.exitCode === null) p.kill("SIGTERM");
    };
    p.stdout.on("data", onData);
    p.stderr.on("data", onData);
    p.on("error", reject);
    p.on("close", (code) => {
      let loads: string[] = [];
      try {
        loads = readFileSync(file, "utf8").split("\n").filter(Boolean);
      } catch {
        /* nothing recorded: the assertions below say so */
      }
      resolve({ code, loads, out });
    });
  });
}

const loaded = (loads: string[]) => Object.entries(HEAVY).filter(([, re]) => loads.some((u) => re.test(u))).map(([name]) => name);

describe("svc loads what a command uses", () => {
  it("svc version: commander and the CLI's entry, nothing heavy", async () => {
    const r = await recorded(["version"]);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toMatch(/^svc \d+\.\d+\.\d+/);
    expect(r.loads.some((u) => u.endsWith("/dist/cli/main.js")), "ran the compiled CLI").toBe(true);
    expect(r.loads.some((u) => u.endsWith(".ts")), "no TypeScript at run time").toBe(false);
    expect(loaded(r.loads)).toEqual([]);
    // not even another command's module
    expect(r.loads.filter((u) => /\/dist\/cli\/(config|status|serve|mcp|doctor)\.js$/.test(u))).toEqual([]);
  });

  it("svc config validate examples/gateway: the manifests code, not the Prisma client, node-llama-cpp or the MCP SDK", async () => {
    const r = await recorded(["config", "validate", "examples/gateway"]);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain("objects valid");
    expect(r.loads.some((u) => u.endsWith("/dist/manifests/validate.js")), "validated with the manifests code").toBe(true);
    expect(loaded(r.loads)).toEqual([]);
    // the kinds' validators compiled at build time: ajv's compiler is not loaded (bin/kind-validators.mjs)
    expect(r.loads.some((u) => u.endsWith("/manifests/generated/kind-validators.mjs")), "the prebuilt validators").toBe(true);
    expect(r.loads.filter((u) => /\/dist\/vendor\/ajv(-formats)?\.js$/.test(u))).toEqual([]);
  });

  it("svc --help, svc status and svc mcp --help load none of them either", async () => {
    const home = tmp();
    for (const args of [["--help"], ["status", "--home", home], ["mcp", "--help"], ["keys", "--help"]]) {
      const r = await recorded(args, { SVC_PORT: "9" }); // nothing listens on port 9: status reads no store
      expect(r.code, `${args.join(" ")}: ${r.out}`).toBe(0);
      expect(loaded(r.loads), args.join(" ")).toEqual([]);
    }
  });

  it("a gateway-only svc serve loads the Prisma client (its store) but neither node-llama-cpp nor the MCP SDK", async () => {
    const home = tmp();
    const r = await recorded(["serve", "--port", "0", "--no-quickstart", "--config", "examples/gateway"], { SVC_HOME: home }, /svc listening on/);
    expect(r.out).toMatch(/svc listening on/);
    const heavy = loaded(r.loads);
    expect(heavy).toContain("the Prisma client"); // the hook sees the server's modules
    expect(heavy).not.toContain("node-llama-cpp");
    expect(heavy).not.toContain("the MCP SDK");
  });
});

describe("svc serve binds before it loads", () => {
  it("answers /health, says what is loading on /ready, and serves a request sent early once loaded", async () => {
    const home = tmp();
    const p = spawn(process.execPath, [path.join(repoRoot, "bin/svc.mjs"), "serve", "--port", "0"], { cwd: repoRoot, env: { ...process.env, SVC_HOME: home }, stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    p.stderr.on("data", (d) => (err += d));
    try {
      await until(() => /bound http:\/\/\S+?:\d+/.test(err) || p.exitCode !== null, 60_000);
      const url = /bound (http:\/\/\S+?:\d+)/.exec(err)?.[1];
      expect(url, err).toBeTruthy();
      const early: any = await (await fetch(`${url}/health`)).json();
      expect(early.status).toBe("ok");
      // a chat sent now waits for the engines and the model instead of failing
      const chat = fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "svc-tiny", messages: [{ role: "user", content: "Hello" }], max_tokens: 4 }) });
      const answer = await chat;
      expect(answer.status).toBe(200);
      expect(((await answer.json()) as any).object).toBe("chat.completion");
      let ready = await fetch(`${url}/ready`);
      for (let i = 0; ready.status !== 200 && i < 300; i++) {
        expect(ready.status).toBe(503);
        expect(((await ready.json()) as any).loading.length).toBeGreaterThan(0); // 503 says what
        await new Promise((r) => setTimeout(r, 100));
        ready = await fetch(`${url}/ready`);
      }
      expect(await ready.json()).toEqual({ ready: true, loading: [] });
      expect(err).toMatch(/svc listening on/);
    } finally {
      p.kill("SIGTERM");
      await new Promise((r) => p.on("close", r));
    }
  });
});
