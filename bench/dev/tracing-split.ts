// Dev tool (not a test): tracing's CPU per request alone, split by stage. The spans of one keyed
// chat request (bench/request-spans.ts: server, chat, upstream client) are made by svc's light
// tracer and then (1) dropped when they end, (2) encoded into protobuf and never sent, or (3) sent
// through the whole http/protobuf pipeline (setup.ts) to the benches' collector in its own process
// on core 0 (bench/otlp-collector.ts). "off" runs the same calls with tracing off. The variants take
// turns, round after round; each line gives the median of the rounds (lowest to highest) and the
// median system time. The gateway bench measures the same spans inside a busy server, where they
// cost more (docs/observability.md, "Cost").
//   taskset -c 1 node --import tsx bench/dev/tracing-split.ts [rounds] [requests per round]
import { AlwaysOffSampler, AlwaysOnSampler, type Sampler } from "@opentelemetry/sdk-trace-base";
import { requestSpans } from "../request-spans";
import { tracing } from "../../engines/telemetry";
import { flushTracing, startTracing, stopTracing } from "../../engines/telemetry/setup";
import { makeSpans } from "../../engines/telemetry/spans";
import { LightTracer } from "../../engines/telemetry/light-tracer";
import { PooledIds } from "../../engines/telemetry/light-ids";
import { encodeLight } from "../../engines/telemetry/otlp-light";
import { Writer } from "../../engines/telemetry/otlp-writer";
import type { LightSpan } from "../../engines/telemetry/light-span";
import { chatSpan, attemptSpan, endCallSpan } from "../../engines/gateway/trace-spans";
import { upstreamSpan, endUpstream } from "../../engines/providers/trace-http";
import { startCollector } from "../otlp-collector";

const rounds = Number(process.argv[2] ?? 7);
const requests = Number(process.argv[3] ?? 30_000);
const one = requestSpans({ tracing, chatSpan, attemptSpan, endCallSpan, upstreamSpan, endUpstream });
// ten requests per event-loop turn, so the exporter's HTTP runs between them as in a server
const run = async (n: number) => {
  for (let i = 0; i < n; i += 10) {
    for (let j = 0; j < 10; j++) one(i + j);
    await new Promise((r) => setImmediate(r));
  }
};

const collector = await startCollector();
const buffer = new Writer(1 << 16);
const lightSpans = (ended: (s: LightSpan) => void, sampler: Sampler = new AlwaysOnSampler()) => makeSpans(new LightTracer(sampler, new PooledIds(), {}, ended), false);
const variants: Record<string, { on(): Promise<void>; off(): Promise<void> }> = {
  off: { on: async () => void (tracing.spans = undefined), off: async () => undefined },
  unsampled: { on: async () => void (tracing.spans = lightSpans(() => undefined, new AlwaysOffSampler())), off: async () => void (tracing.spans = undefined) },
  made: { on: async () => void (tracing.spans = lightSpans(() => undefined)), off: async () => void (tracing.spans = undefined) },
  encoded: {
    on: async () => {
      tracing.spans = lightSpans((s) => {
        if (buffer.pos > 60_000) buffer.pos = 0;
        encodeLight(buffer, s);
      });
    },
    off: async () => void (tracing.spans = undefined),
  },
  exported: {
    on: () => startTracing({}, "dev", { endpoint: collector.url, protocol: "http/protobuf" }).then(() => undefined),
    off: async () => {
      await flushTracing();
      await stopTracing();
    },
  },
};

const cpu: Record<string, number[]> = {};
const sys: Record<string, number[]> = {};
try {
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 ? Object.entries(variants).reverse() : Object.entries(variants);
    for (const [name, v] of order) {
      await v.on();
      await run(5000); // warm (and, for the pipeline, its first export)
      const c0 = process.cpuUsage();
      await run(requests);
      if (name === "exported") await flushTracing(); // every span of the round sent
      const c = process.cpuUsage(c0);
      await v.off();
      (cpu[name] ??= []).push((c.user + c.system) / requests);
      (sys[name] ??= []).push(c.system / requests);
    }
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const posts = await collector.counts();
  console.log(`${rounds} rounds of ${requests} requests (3 spans each); CPU per request, median (lowest to highest); system time's median`);
  for (const name of Object.keys(variants)) {
    const xs = [...cpu[name]].sort((a, b) => a - b);
    console.log(`${name.padEnd(9)} ${med(xs).toFixed(2)} µs (${xs[0].toFixed(2)} to ${xs[xs.length - 1].toFixed(2)}), system ${med(sys[name]).toFixed(2)} µs`);
  }
  console.log(`collector: ${posts.posts} export requests, ${Math.round(posts.bytes / Math.max(1, posts.posts))} bytes each`);
} finally {
  collector.proc.kill("SIGTERM");
}
