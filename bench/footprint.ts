// Footprint (`npm run bench -- footprint`): resident memory at rest, right after start and a few
// seconds idle, of svc gateway-only (`serve --no-quickstart` with the gateway bench's Provider
// and policy: no model, no MCP server), of svc with the quickstart's model loaded (one chat
// answered; the model file's size is subtracted), and of Portkey's gateway (--headless), all
// measured in the same run on this machine; and what `npm ci` put in node_modules here.
import { execFileSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { root, sleep, start, svcEnv, svcNodeFlags, startStandinGateway, startSvcProcess, gatewayEnv, waitHttp } from "./processes";
import { gcProbe, heapAfterGc, mb, residentOf } from "./footprint-probe";
import { table, type Section } from "./report";

const require = createRequire(import.meta.url);
const IDLE_MS = Number(process.env.FOOTPRINT_IDLE_MS ?? 5000);

/** `svc serve --port 0` with the quickstart (the svc-tiny model) on a fresh home. */
async function startQuickstart(home: string, probe: { nodeArgs: string[]; env: Record<string, string> }): Promise<{ proc: ChildProcess; url: string }> {
  const proc = start(1, process.execPath, [...svcNodeFlags(), ...probe.nodeArgs, "bin/svc.mjs", "serve", "--port", "0"], { ...svcEnv(), SVC_HOME: home, ...probe.env });
  proc.stdout?.resume();
  proc.stderr?.resume();
  const f = path.join(home, "server.json");
  for (let i = 0; i < 600 && proc.exitCode === null; i++) {
    try {
      return { proc, url: JSON.parse(readFileSync(f, "utf8")).url };
    } catch {}
    await sleep(100);
  }
  proc.kill("SIGTERM");
  throw new Error("svc (quickstart) did not start");
}

export async function footprintBench(): Promise<Section> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), "svc-bench-foot-"));
  const procs: ChildProcess[] = [];
  try {
    const up = await startStandinGateway(tmp);
    procs.push(up.proc);
    const cfg = up.cfg;
    const rows: (string | number)[][] = [];
    const data: Record<string, unknown> = {};

    // svc, gateway only
    const gwProbe = gcProbe(path.join(tmp, "gw.json"));
    const gw = await startSvcProcess({ home: path.join(tmp, "gw"), config: cfg, core: 1, env: { ...gatewayEnv, ...gwProbe.env }, nodeArgs: gwProbe.nodeArgs });
    procs.push(gw.proc);
    await waitHttp(`${gw.url}/ready`);
    await sleep(IDLE_MS);
    const gwMem = residentOf(gw.proc.pid!);
    const gwHeap = await heapAfterGc(gw.proc.pid!, path.join(tmp, "gw.json"));
    gw.proc.kill("SIGTERM");

    // Portkey 1.15 headless
    const pkPort = 20000 + Math.floor(Math.random() * 20000);
    const pk = start(1, process.execPath, [require.resolve("@portkey-ai/gateway/build/start-server.js"), "--headless", `--port=${pkPort}`]);
    procs.push(pk);
    pk.stdout?.resume();
    pk.stderr?.resume();
    await waitHttp(`http://127.0.0.1:${pkPort}/`);
    await sleep(IDLE_MS);
    const pkMem = residentOf(pk.pid!);
    pk.kill("SIGTERM");

    // svc with the quickstart's model loaded
    const qProbe = gcProbe(path.join(tmp, "q.json"));
    const q = await startQuickstart(path.join(tmp, "q"), qProbe);
    procs.push(q.proc);
    const chat = await waitHttp(`${q.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "svc-tiny", messages: [{ role: "user", content: "Hello" }], max_tokens: 4 }) });
    if (!chat.ok) throw new Error(`quickstart chat: ${chat.status} ${await chat.text()}`);
    await sleep(IDLE_MS);
    const qMem = residentOf(q.proc.pid!);
    const qHeap = await heapAfterGc(q.proc.pid!, path.join(tmp, "q.json"));
    const model = path.join(tmp, "q", "models", "svc-tiny.gguf");
    const modelBytes = existsSync(model) ? statSync(model).size : 0;
    q.proc.kill("SIGTERM");

    const ratio = (a: number) => (a / pkMem.rss).toFixed(2);
    rows.push(["svc, gateway only (--no-quickstart, a Provider and a policy)", mb(gwMem.rss), ratio(gwMem.rss), mb(gwHeap.heapUsed), gwMem.threads]);
    rows.push([`svc, quickstart model loaded, minus the model file (${mb(modelBytes)})`, mb(qMem.rss - modelBytes), ratio(qMem.rss - modelBytes), mb(qHeap.heapUsed), qMem.threads]);
    rows.push(["Portkey gateway 1.15 --headless", mb(pkMem.rss), "1.00", "", pkMem.threads]);
    Object.assign(data, { svcGateway: { ...gwMem, heapUsed: gwHeap.heapUsed }, svcModel: { ...qMem, heapUsed: qHeap.heapUsed, modelBytes }, portkey: pkMem });

    // what the install in this checkout holds (du, as `du -sm node_modules`)
    const du = (p: string) => {
      try {
        return Number(execFileSync("du", ["-sm", "-L", p], { encoding: "utf8" }).split("\t")[0]);
      } catch {
        return NaN;
      }
    };
    const nm = path.join(root, "node_modules");
    const install = { total: du(nm), nodeLlamaCppBuilds: du(path.join(nm, "@node-llama-cpp")) };
    data.installMb = install;

    const body = [
      `Resident memory ${IDLE_MS / 1000} s after each server was ready (svc: engines loaded and controllers settled), pinned to core 1; heap used after a forced collection (bench/gc-probe.mjs). Ratio: to Portkey's resident memory in this run (aim ≤ 1.5).`,
      "",
      table(["server", "resident", "/ Portkey", "heap used", "threads"], rows),
      "",
      `node_modules here: ${install.total} MB, of which node-llama-cpp's platform builds ${install.nodeLlamaCppBuilds} MB (a shared or GPU-enabled install may hold more than a fresh \`npm ci\`).`,
    ].join("\n");
    return { title: "Footprint: memory at rest", body, data };
  } finally {
    for (const p of procs) if (p.exitCode === null) p.kill("SIGTERM");
    await sleep(500);
    rmSync(tmp, { recursive: true, force: true });
  }
}
