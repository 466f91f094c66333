// Gateway benchmark: autocannon load against a loopback stand-in upstream measured directly,
// through svc (key with a policy, limits and audit on), through a bare Node gateway (no checks:
// Node's own limit for the job, bench/bare-gateway.ts) and through Portkey's open-source
// gateway, at 1 and 50 connections. Non-streaming (Portkey's streaming fails on Node 20).
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { cpuMicros, firstLine, gatewayEnv, gatewayKey, loadRun, sleep, start, startStandin, startSvcProcess, waitHttp, writeGatewayConfig } from "./processes";
import { startCollector } from "./otlp-collector";
import { table, type Section } from "./report";

/** milliseconds, to the microsecond below 10 ms */
const lat = (x: number) => `${x.toFixed(Math.abs(x) < 10 ? 3 : 1)} ms`;

const require = createRequire(import.meta.url);

// Core 1 runs the gateway under test; core 0 runs the load generator and the upstream, so each
// gateway is measured on one core of its own rather than fighting autocannon for it.

/** rps: whole run; steady: mean of the per-second counts after the first second (autocannon is
 * a fresh process per cell and its first second includes its own start-up and JIT warm-up);
 * latencies in ms with microsecond precision (bench/load.ts). */
interface Load { rps: number; steady: number; perSecond: number[]; mean: number; p50: number; p99: number; errors: number; non2xx: number; cpuUs?: number }

const BODY = JSON.stringify({ model: "bench-model", messages: [{ role: "user", content: "Say hello." }], max_tokens: 16 });
/** The same request to the model with a response cache: after the first, every one is a hit. */
const CACHED_BODY = JSON.stringify({ model: "bench-cached", messages: [{ role: "user", content: "Say hello." }], max_tokens: 16 });


/** One autocannon run (bench/load.ts) as a child process on core 0; `pid`: the gateway process,
 * whose CPU time per request is measured. */
async function load(url: string, headers: Record<string, string>, connections: number, seconds: number, pid?: number, body = BODY): Promise<Load> {
  const cpu0 = cpuMicros(pid);
  const r = (await loadRun({ url, headers, body, connections, seconds })) as Omit<Load, "steady">;
  const cpu1 = cpuMicros(pid);
  const after = r.perSecond.slice(1, seconds);
  const steady = after.length ? after.reduce((a, b) => a + b, 0) / after.length : r.rps;
  const requests = r.rps * seconds;
  const cpuUs = cpu0 !== undefined && cpu1 !== undefined && requests > 0 ? (cpu1 - cpu0) / requests : undefined;
  return { ...r, steady, ...(cpuUs !== undefined ? { cpuUs } : {}) };
}

export async function gatewayBench(): Promise<Section> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), "svc-bench-gw-"));
  const procs: ChildProcess[] = [];
  const seconds = Number(process.env.BENCH_SECONDS ?? 8);
  const rounds = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
  let collector: Awaited<ReturnType<typeof startCollector>> | undefined;
  try {
    const up = await startStandin();
    procs.push(up.proc);
    const upstream = up.url;

    // svc with a Provider pointing at the stand-in and a key carrying a policy, limits and audit.
    const cfg = path.join(tmp, "config");
    mkdirSync(cfg);
    writeGatewayConfig(cfg, upstream);
    // this checkout's svc also serves "bench-cached", a model with a response cache (docs/cache.md):
    // the same request again and again is the cache-hit path (a baseline may predate the cache)
    const cfgCache = path.join(tmp, "config-cache");
    mkdirSync(cfgCache);
    writeGatewayConfig(cfgCache, upstream);
    writeFileSync(path.join(cfgCache, "cache.yaml"), `apiVersion: svc/v1\nkind: Provider\nmetadata: {name: standin-cached}\nspec:\n  type: openai\n  baseUrl: ${upstream}\n  credential: env:BENCH_UPSTREAM_KEY\n  models:\n    - {name: bench-cached, inputPerMillion: 0.5, outputPerMillion: 1.5, cache: {scope: key}}\n`);
    // svc started from `checkout` (default: this one) with the bench key; returns its URL and key.
    const startSvc = async (home: string, checkout?: string) => {
      const svc = await startSvcProcess({ home, config: checkout ? cfg : cfgCache, core: 1, checkout, env: gatewayEnv });
      procs.push(svc.proc);
      return { url: svc.url, key: await gatewayKey(svc.url), pid: svc.proc.pid };
    };
    const svc = await startSvc(path.join(tmp, "home"));
    // BENCH_BASELINE=<another svc checkout, installed>: its svc joins the rounds as "baseline", so
    // a change is compared with earlier code in the same run, on the same machine.
    const baselineDir = process.env.BENCH_BASELINE?.trim();
    const baseline = baselineDir ? await startSvc(path.join(tmp, "baseline"), path.resolve(baselineDir)) : undefined;
    // BENCH_TRACING=1: the same svc with OpenTelemetry traces on (every request sampled, OTLP
    // http/protobuf to a loopback collector in its own process on core 0, bench/otlp-collector.ts)
    // joins the rounds as "traced"
    collector = process.env.BENCH_TRACING === "1" ? await startCollector() : undefined;
    if (collector) procs.push(collector.proc);
    const traced = collector ? await (async () => {
      const t = await startSvcProcess({ home: path.join(tmp, "traced"), config: cfgCache, core: 1, env: { ...gatewayEnv, OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf", OTEL_TRACES_SAMPLER: "always_on" } });
      procs.push(t.proc);
      return { url: t.url, key: await gatewayKey(t.url), pid: t.proc.pid };
    })() : undefined;

    // The bare Node gateway on the same core as svc, forwarding to the same upstream.
    const bareProc = start(1, process.execPath, ["--import", "tsx", "bench/bare-gateway.ts", upstream]);
    procs.push(bareProc);
    const bareUrl = `http://127.0.0.1:${Number(await firstLine(bareProc))}`;

    // Portkey 1.15.2, routed to the same upstream with its custom-host headers.
    const pkPort = Number(new URL(upstream).port) + 1 + Math.floor(Math.random() * 1000);
    const pk = start(1, process.execPath, [require.resolve("@portkey-ai/gateway/build/start-server.js"), "--headless", `--port=${pkPort}`]);
    procs.push(pk);
    const pkUrl = `http://127.0.0.1:${pkPort}`;
    await waitHttp(`${pkUrl}/`);

    const targets: Record<string, { url: string; headers: Record<string, string>; body?: string; pid?: number }> = {
      direct: { url: `${upstream}/chat/completions`, headers: { authorization: "Bearer sk-upstream-bench" } },
      // bare right before svc (and traced right after), so the two sides of each paired figure run back to back
      bare: { url: `${bareUrl}/v1/chat/completions`, headers: {}, pid: bareProc.pid },
      svc: { url: `${svc.url}/v1/chat/completions`, headers: { authorization: `Bearer ${svc.key}` }, pid: svc.pid },
      // traced next to svc: its rounds run seconds apart from svc's, which it is paired with
      ...(traced ? { traced: { url: `${traced.url}/v1/chat/completions`, headers: { authorization: `Bearer ${traced.key}` }, pid: traced.pid } } : {}),
      "svc-cache-hit": { url: `${svc.url}/v1/chat/completions`, headers: { authorization: `Bearer ${svc.key}` }, body: CACHED_BODY, pid: svc.pid },
      ...(baseline ? { baseline: { url: `${baseline.url}/v1/chat/completions`, headers: { authorization: `Bearer ${baseline.key}` }, pid: baseline.pid } } : {}),
      portkey: {
        url: `${pkUrl}/v1/chat/completions`,
        headers: { authorization: "Bearer sk-upstream-bench", "x-portkey-provider": "openai", "x-portkey-custom-host": upstream },
        pid: pk.pid,
      },
    };
    // Warm up every path (JIT, keep-alive pools) before measuring.
    for (const t of Object.values(targets)) await load(t.url, t.headers, 4, 2, undefined, t.body);

    // Paths take turns, round after round, so a slow spell on this shared machine hits them all
    // alike; each path's figure is its median round (by steady requests/s).
    const names = Object.keys(targets);
    const runs: Record<string, Record<number, Load[]>> = Object.fromEntries(names.map((n) => [n, { 1: [], 50: [] }]));
    // every other round runs the paths in reverse order, so no path always follows the same one
    for (const c of [1, 50]) for (let i = 0; i < rounds; i++) {
      const order = i % 2 ? Object.entries(targets).reverse() : Object.entries(targets);
      for (const [name, t] of order) runs[name][c].push(await load(t.url, t.headers, c, seconds, t.pid, t.body));
    }
    const median = (xs: Load[]) => [...xs].sort((a, b) => a.steady - b.steady)[Math.floor(xs.length / 2)];
    const results: Record<string, Record<number, Load>> = Object.fromEntries(names.map((n) => [n, {}]));
    for (const name of Object.keys(runs)) for (const c of [1, 50]) results[name][c] = median(runs[name][c]);
    // svc's round divided by the other path's round next to it, median over rounds: the two took
    // turns within seconds, so a slow spell of this shared machine hits both sides of a ratio
    const paired = (other: string, c: number, of = "svc") => {
      const r = runs[of][c].map((x, i) => x.steady / runs[other][c][i].steady).sort((a, b) => a - b);
      return { median: r[Math.floor(r.length / 2)], min: r[0], max: r[r.length - 1] };
    };
    // svc's p50 minus bare's in the same round (they run back to back), median over rounds: the
    // one-connection added latency without comparing two median rounds picked apart by throughput
    const pairedAdded = (c: number) => {
      const d = runs.svc[c].map((x, i) => x.p50 - runs.bare[c][i].p50).sort((a, b) => a - b);
      return { median: d[Math.floor(d.length / 2)], min: d[0], max: d[d.length - 1] };
    };
    const pairedLine = (other: string) =>
      `svc / ${other} paired (the median over rounds of svc's round over ${other}'s next to it; lowest to highest round in brackets): ` +
      [1, 50].map((c) => { const p = paired(other, c); return `${p.median.toFixed(2)} at ${c} connection${c > 1 ? "s" : ""} (${p.min.toFixed(2)} to ${p.max.toFixed(2)})`; }).join(", ") + ".";
    const others = names.filter((n) => n !== "svc");
    // CPU per request: the median round's, per path and connection count
    const cpu = (n: string, c: number) => {
      const xs = runs[n][c].map((r) => r.cpuUs).filter((x): x is number => x !== undefined).sort((a, b) => a - b);
      return xs.length ? xs[Math.floor(xs.length / 2)] : undefined;
    };
    const us = (x: number | undefined) => (x === undefined ? "n/a" : `${Math.round(x)} µs`);
    const cpuLine = names.filter((n) => n !== "direct").map((n) => `${n} ${us(cpu(n, 1))} at 1 connection, ${us(cpu(n, 50))} at 50`).join("; ");
    const cpuRatio = (c: number) => { const a = cpu("svc", c), b = cpu("bare", c); return a && b ? (b / a).toFixed(2) : "n/a"; };
    const roundsLine = (c: number) => Object.keys(runs).map((n) => `${n} ${runs[n][c].map((r) => Math.round(r.steady)).join(" / ")}`).join("; ");

    const rows: (string | number)[][] = [];
    for (const c of [1, 50]) {
      for (const name of names) {
        const r = results[name][c];
        const d = results.direct[c];
        const added = (x: number) => (name === "direct" ? "-" : lat(x));
        rows.push([c, name, Math.round(r.steady), Math.round(r.rps), lat(r.p50), lat(r.p99), added(r.mean - d.mean), added(r.p50 - d.p50), added(r.p99 - d.p99), r.errors + r.non2xx]);
      }
    }
    const ratio = (a: number, b: number) => (b > 0 ? (a / b).toFixed(2) : "n/a");
    const s1 = results.svc[1], s50 = results.svc[50];
    const exported = collector ? await collector.counts() : { posts: 0, bytes: 0 };
    const body = [
      `Load: autocannon, ${seconds} s per cell, ${rounds} rounds with the paths taking turns (each figure is the path's median round), non-streaming chat completions. Each process is pinned with taskset: the gateway under test (svc, bare or Portkey) alone on core 1; autocannon and the stand-in upstream on core 0. "direct" is autocannon straight to the upstream; "bare" is bench/bare-gateway.ts (node:http, JSON.parse of the body, forward with an undici Pool, answer; no checks), the limit Node itself sets for a gateway on this machine.`,
      "",
      table(["connections", "path", "requests/s (steady)", "requests/s (whole run)", "p50", "p99", "added mean", "added p50", "added p99", "errors+non-2xx"], rows),
      "",
      `"steady" is the mean of the per-second counts after the first second (each cell starts a fresh autocannon process, whose first second includes its own start-up); "whole run" is all requests over the whole duration. Latencies are per response, measured by autocannon with hrtime and kept at microsecond precision by bench/load.ts; "added" is the path's figure minus direct's at the same connection count.`,
      "",
      `Steady requests/s of every round: at 1 connection ${roundsLine(1)}; at 50 connections ${roundsLine(50)}.`,
      "",
      `svc / direct requests/s (steady): ${ratio(s1.steady, results.direct[1].steady)} at 1 connection, ${ratio(s50.steady, results.direct[50].steady)} at 50.`,
      ...(results.baseline
        ? [
            `svc / baseline (${process.env.BENCH_BASELINE_NAME ?? baselineDir}) requests/s (steady): ${ratio(s1.steady, results.baseline[1].steady)} at 1 connection, ${ratio(s50.steady, results.baseline[50].steady)} at 50; ` +
              `baseline / direct: ${ratio(results.baseline[1].steady, results.direct[1].steady)} at 1, ${ratio(results.baseline[50].steady, results.direct[50].steady)} at 50.`,
          ]
        : []),
      `svc / bare requests/s (steady): ${ratio(s1.steady, results.bare[1].steady)} at 1 connection, ${ratio(s50.steady, results.bare[50].steady)} at 50 (aim ≥ 0.7 at 50); bare / direct: ${ratio(results.bare[1].steady, results.direct[1].steady)} at 1, ${ratio(results.bare[50].steady, results.direct[50].steady)} at 50.`,
      `svc added p50 over bare's at 1 connection: ${lat(s1.p50 - results.bare[1].p50)} (aim ≤ 0.1 ms); at 50: ${lat(s50.p50 - results.bare[50].p50)}. ` +
        `Paired (svc's p50 minus bare's in the same round, median over rounds, lowest to highest in brackets): ${[1, 50].map((c) => { const p = pairedAdded(c); return `${lat(p.median)} at ${c} (${lat(p.min)} to ${lat(p.max)})`; }).join(", ")}.`,
      ...others.map(pairedLine),
      `Gateway CPU per request (user + system time of the gateway's process over the round, from /proc, divided by its requests; median round): ${cpuLine}. bare / svc CPU per request, the share of Node's own cost in svc's: ${cpuRatio(1)} at 1 connection, ${cpuRatio(50)} at 50 (the bound on svc / bare requests/s when the gateway's core is saturated; it holds on a loaded machine where requests/s do not).`,
      ...(results.traced
        ? [`traced / svc paired (tracing on, 100% sampled, OTLP http/protobuf to a loopback collector, over tracing off; median over rounds, lowest to highest in brackets): ` +
            [1, 50].map((c) => { const p = paired("svc", c, "traced"); return `${p.median.toFixed(2)} at ${c} connection${c > 1 ? "s" : ""} (${p.min.toFixed(2)} to ${p.max.toFixed(2)})`; }).join(", ") + `; ${exported.posts} export requests (${(exported.bytes / 1e6).toFixed(1)} MB) received.`]
        : []),
      `svc / Portkey requests/s (steady): ${ratio(s1.steady, results.portkey[1].steady)} at 1 connection, ${ratio(s50.steady, results.portkey[50].steady)} at 50 (aim ≥ 5 at 50); whole run: ${ratio(s50.rps, results.portkey[50].rps)} at 50.`,
      `svc cache hits / svc misses (the same path forwarded upstream) requests/s (steady): ${ratio(results["svc-cache-hit"][1].steady, s1.steady)} at 1 connection, ${ratio(results["svc-cache-hit"][50].steady, s50.steady)} at 50 (aim ≥ 1.5 at 50); ` +
        // paired rounds and CPU per request hold on a loaded machine where the medians drift apart
        `paired ${[1, 50].map((c) => { const p = paired("svc", c, "svc-cache-hit"); return `${p.median.toFixed(2)} at ${c} (${p.min.toFixed(2)} to ${p.max.toFixed(2)})`; }).join(", ")}; ` +
        `miss / hit CPU per request ${[1, 50].map((c) => { const h = cpu("svc-cache-hit", c), m = cpu("svc", c); return `${h && m ? (m / h).toFixed(2) : "n/a"} at ${c}`; }).join(", ")}.`,
      `svc added latency at 1 connection: p50 ${lat(s1.p50 - results.direct[1].p50)} (aim < 0.5 ms), p99 ${lat(s1.p99 - results.direct[1].p99)}, mean ${lat(s1.mean - results.direct[1].mean)}. Through svc the round trip also crosses between the two cores twice more than the direct path.`,
      "",
      "svc path checks on every request: key hash lookup, IP allowlist (CIDR), policy with Allow and Deny statements, rate limits (token bucket + sliding hour), token and budget reservation/settlement, audit entry (batched).",
    ].join("\n");
    return { title: "Gateway: svc vs direct vs Portkey", body, data: { median: results, rounds: runs, paired: Object.fromEntries(others.map((o) => [o, { 1: paired(o, 1), 50: paired(o, 50) }])), pairedAddedP50OverBare: { 1: pairedAdded(1), 50: pairedAdded(50) }, cpuPerRequestUs: Object.fromEntries(names.map((n) => [n, { 1: cpu(n, 1), 50: cpu(n, 50) }])), ...(results.traced ? { tracedOverSvc: { 1: paired("svc", 1, "traced"), 50: paired("svc", 50, "traced") } } : {}) } };
  } finally {
    for (const p of procs) p.kill("SIGTERM");
    await sleep(500);
    rmSync(tmp, { recursive: true, force: true });
  }
}
