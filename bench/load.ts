// One autocannon load run in its own process (started pinned by bench/gateway.ts):
//   node --import tsx bench/load.ts '<json options>'
// prints one JSON line: throughput, per-second counts and latency percentiles in microseconds.
// autocannon's own latency histogram holds whole milliseconds, too coarse for sub-millisecond
// overheads, so every response's time (autocannon measures it with hrtime) is kept here.
import autocannon from "autocannon";
import { sortedPercentile } from "./report";

export interface LoadOptions {
  url: string;
  headers: Record<string, string>;
  body: string;
  connections: number;
  seconds: number;
  /** requests per second across all connections (autocannon's overallRate); unset: as fast as answered */
  rate?: number;
  /** also return every 2xx response's latency (ms), for percentiles over several runs */
  samples?: boolean;
}

export interface LoadResult {
  rps: number;
  /** requests completed in each whole second of the run */
  perSecond: number[];
  /** latency of 2xx responses, milliseconds with microsecond precision */
  mean: number;
  p50: number;
  p99: number;
  p999: number;
  /** the slowest response */
  max: number;
  errors: number;
  non2xx: number;
  samples?: number[];
}

async function run(o: LoadOptions): Promise<LoadResult> {
  const times: number[] = [];
  const perSecond: number[] = [];
  let finish!: (r: autocannon.Result) => void;
  let fail!: (e: unknown) => void;
  const done = new Promise<autocannon.Result>((resolve, reject) => ((finish = resolve), (fail = reject)));
  const instance = autocannon(
    {
      url: o.url,
      method: "POST",
      headers: { "content-type": "application/json", ...o.headers },
      body: o.body,
      connections: o.connections,
      duration: o.seconds,
      ...(o.rate ? { overallRate: o.rate } : {}),
    },
    (err, result) => (err ? fail(err) : finish(result)),
  );
  // @types/autocannon lags the runtime: the instance's events carry these arguments.
  const events = instance as unknown as {
    on(ev: "response", f: (client: unknown, status: number, bytes: number, ms: number) => void): void;
    on(ev: "tick", f: (t: { counter: number }) => void): void;
  };
  events.on("response", (_client, status, _bytes, ms) => {
    if (status >= 200 && status < 300) times.push(ms);
  });
  events.on("tick", (t) => perSecond.push(t.counter));
  const r = await done;
  const sorted = Float64Array.from(times).sort();
  const mean = times.length ? times.reduce((a, b) => a + b, 0) / times.length : 0;
  return {
    rps: r.requests.total / r.duration,
    perSecond,
    mean,
    p50: sortedPercentile(sorted, 50),
    p99: sortedPercentile(sorted, 99),
    p999: sortedPercentile(sorted, 99.9),
    max: sorted.length ? sorted[sorted.length - 1] : 0,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
    ...(o.samples ? { samples: times } : {}),
  };
}

const opts = JSON.parse(process.argv[2] ?? "{}") as LoadOptions;
process.stdout.write(JSON.stringify(await run(opts)) + "\n");
