// Tracing's own cost, measured so that a loaded machine barely moves it: the spans one keyed chat
// request makes (server, chat with the GenAI and svc.* attributes, upstream client), through svc's
// real span helpers (dist/), the SDK's batch processor and the OTLP exporter to a loopback
// collector, repeated in this process; the figure is CPU time (process.cpuUsage) per request,
// export included. The gateway bench (BENCH_TRACING=1) measures the same cost as requests/s.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { root } from "./processes";
import { table, type Section } from "./report";
import { requestSpans } from "./request-spans";

const dist = (p: string) => import(pathToFileURL(path.join(root, "dist", p)).href);

export async function tracingBench(): Promise<Section> {
  let posts = 0;
  let bytes = 0;
  const sink = createServer((req, res) => {
    req.on("data", (d: Buffer) => (bytes += d.length));
    req.on("end", () => {
      posts++;
      res.end();
    });
  });
  await new Promise<void>((r) => sink.listen(0, "127.0.0.1", r));
  const endpoint = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;
  const setup = await dist("engines/telemetry/setup.js");
  const { tracing } = await dist("engines/telemetry/index.js");
  const { chatSpan, attemptSpan, endCallSpan } = await dist("engines/gateway/trace-spans.js");
  const { upstreamSpan, endUpstream } = await dist("engines/providers/trace-http.js");
  const one = requestSpans({ tracing, chatSpan, attemptSpan, endCallSpan, upstreamSpan, endUpstream });
  // ten requests per event-loop turn, so the exporter's HTTP runs between them as in a server
  const run = async (n: number) => {
    for (let i = 0; i < n; i += 10) {
      for (let j = 0; j < 10; j++) one(i + j);
      await new Promise((r) => setImmediate(r));
    }
  };
  const n = Number(process.env.BENCH_TRACING_REQUESTS ?? 20_000);
  const rows: (string | number)[][] = [];
  const data: Record<string, unknown> = {};
  try {
    for (const protocol of ["http/protobuf", "http/json"] as const) {
      // settings, not process.env: the sections after this one start svc processes with this env
      await setup.startTracing({}, "bench", { endpoint, protocol });
      posts = 0;
      bytes = 0;
      await run(5000); // warm-up (JIT)
      await setup.flushTracing();
      const per: number[] = [];
      for (let r = 0; r < 5; r++) {
        const c0 = process.cpuUsage();
        await run(n);
        await setup.flushTracing();
        const c = process.cpuUsage(c0);
        per.push((c.user + c.system) / n);
      }
      await setup.stopTracing();
      per.sort((a, b) => a - b);
      const median = per[2];
      rows.push([protocol, `${median.toFixed(1)} µs`, `${per[0].toFixed(1)} to ${per[4].toFixed(1)} µs`, Math.round(bytes / (n * 5 + 5000)), posts]);
      data[protocol] = { cpuUsPerRequest: median, rounds: per, bytesPerRequest: bytes / (n * 5 + 5000), exports: posts };
    }
  } finally {
    await new Promise((r) => sink.close(r));
  }
  const body = [
    `The spans of one keyed chat request (server, chat, upstream client: 3 spans, every one sampled) made by svc's span helpers and exported over OTLP to a loopback collector in this process, ${n} requests per round, 5 rounds; CPU time per request (user + system, the median round; lowest to highest in the next column). This is what tracing adds to svc's CPU per request (the gateway bench's figure), measured without the HTTP load, so a busy machine moves it little.`,
    "",
    table(["protocol", "CPU per request", "rounds", "bytes exported per request", "export requests"], rows),
  ].join("\n");
  return { title: "Tracing: CPU per request of the spans and their export", body, data };
}

/** A loopback OTLP/HTTP sink that accepts and drops exports: the dev tools' traced svc sends to
 * it (bench/dev/gateway-cpu.ts, gateway-profile.ts with TRACED=1), from this process's core. */
export async function otlpSink(): Promise<string> {
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => res.end());
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  server.unref();
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
