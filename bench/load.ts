// One autocannon load run in its own process (started pinned by bench/gateway.ts):
//   node --import tsx bench/load.ts '<json options>'
// prints one JSON line: throughput, per-second counts and latency percentiles in microseconds.
// autocannon's own latency histogram holds whole milliseconds, too coarse for sub-millisecond
// overheads, so every response's time (autocannon measures it with hrtime) is kept here.
import autocannon from "autocannon";

export interface LoadOptions {
  url: string;
  headers: Record<string, string>;
  body: string;
  connections: number;
  seconds: number;
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
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
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
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    p999: percentile(sorted, 99.9),
    max: sorted.length ? sorted[sorted.length - 1] : 0,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
  };
}

const opts = JSON.parse(process.argv[2] ?? "{}") as LoadOptions;
process.stdout.write(JSON.stringify(await run(opts)) + "\n");
