// Soak (`npm run bench -- soak`): SOAK_SECONDS (default 300) of chat completions at 50
// connections through a key with every check on (policy, rate, budget and token limits, IP
// allowlist, audit; bench/processes.ts gatewayKey) against the loopback stand-in upstream.
// svc's resident memory is sampled every second: at start (idle, before load), after the first
// minute, the peak, at the end of the load, and the heap after a forced collection once the load
// stopped. Bounded per-connection and per-request state shows as an end within 10% of the
// one-minute mark.
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { gatewayEnv, gatewayKey, loadRun, sleep, startStandinGateway, startSvcProcess } from "./processes";
import { gcProbe, heapAfterGc, mb, residentOf } from "./footprint-probe";
import { table, type Section } from "./report";

const BODY = JSON.stringify({ model: "bench-model", messages: [{ role: "user", content: "Say hello." }], max_tokens: 16 });

export async function soakBench(): Promise<Section> {
  const seconds = Number(process.env.SOAK_SECONDS ?? 300);
  const connections = Number(process.env.SOAK_CONNECTIONS ?? 50);
  const tmp = mkdtempSync(path.join(os.tmpdir(), "svc-bench-soak-"));
  const procs: ChildProcess[] = [];
  try {
    const up = await startStandinGateway(tmp);
    procs.push(up.proc);
    const cfg = up.cfg;
    const probeFile = path.join(tmp, "gc.json");
    const probe = gcProbe(probeFile);
    const svc = await startSvcProcess({ home: path.join(tmp, "home"), config: cfg, core: 1, env: { ...gatewayEnv, ...probe.env }, nodeArgs: probe.nodeArgs });
    procs.push(svc.proc);
    const pid = svc.proc.pid!;
    const key = await gatewayKey(svc.url);
    await sleep(3000); // settled: controllers done, start-up garbage collectable
    const start = residentOf(pid);
    const startHeap = await heapAfterGc(pid, probeFile);

    const samples: number[] = [];
    const timer = setInterval(() => {
      try {
        samples.push(residentOf(pid).rss);
      } catch {}
    }, 1000);
    const r = await loadRun({ url: `${svc.url}/v1/chat/completions`, headers: { authorization: `Bearer ${key}` }, body: BODY, connections, seconds });
    clearInterval(timer);
    const end = residentOf(pid);
    await sleep(2000);
    const endHeap = await heapAfterGc(pid, probeFile);
    const afterGc = residentOf(pid);

    const minute = samples[Math.min(59, samples.length - 1)] ?? start.rss;
    const peak = Math.max(start.rss, ...samples);
    const drift = (end.rss - minute) / minute;
    const requests = Math.round(r.rps * seconds);
    const body = [
      `${seconds} s at ${connections} connections through a key with every check on (policy, rate, budget and token limits, IP allowlist, audit), non-streaming chat to the loopback stand-in; svc pinned to core 1, load and stand-in on core 0. ${requests} requests (${Math.round(r.rps)}/s, ${r.errors} errors, ${r.non2xx} non-2xx).`,
      "",
      table(
        ["point", "resident", "heap used (after forced GC)", "threads"],
        [
          ["start (idle, before load)", mb(start.rss), mb(startHeap.heapUsed), start.threads],
          ["after the first minute", mb(minute), "", ""],
          ["peak", mb(peak), "", ""],
          ["end of load", mb(end.rss), "", end.threads],
          ["2 s after, forced GC", mb(afterGc.rss), mb(endHeap.heapUsed), afterGc.threads],
        ],
      ),
      "",
      `End vs the one-minute mark: ${(drift * 100).toFixed(1)}% (aim within 10%).`,
    ].join("\n");
    return {
      title: "Soak: memory under load",
      body,
      data: { seconds, connections, requests, rps: r.rps, errors: r.errors, non2xx: r.non2xx, rss: { start: start.rss, minute, peak, end: end.rss, afterGc: afterGc.rss }, heapUsed: { start: startHeap.heapUsed, end: endHeap.heapUsed }, drift, samples },
    };
  } finally {
    for (const p of procs) p.kill("SIGTERM");
    await sleep(500);
    rmSync(tmp, { recursive: true, force: true });
  }
}
