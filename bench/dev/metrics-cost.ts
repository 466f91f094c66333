// Dev tool (not a test): what the metrics add per gateway request, against prom-client's own
// pre-bound children doing the same counting. node --import tsx bench/dev/metrics-cost.ts
import { Counter, Histogram, Registry } from "prom-client";
import { GatewayMetrics, DURATION_BUCKETS } from "../../engines/metrics/gateway";
import { HttpMetrics } from "../../engines/metrics/http";

const N = 2_000_000;
const route = "/v1/chat/completions";

function run(name: string, f: (i: number) => void): number {
  for (let i = 0; i < 200_000; i++) f(i); // warm up
  const t = process.hrtime.bigint();
  for (let i = 0; i < N; i++) f(i);
  const ns = Number(process.hrtime.bigint() - t) / N;
  console.log(`${name.padEnd(58)} ${ns.toFixed(1)} ns/request`);
  return ns;
}

const gw = new GatewayMetrics();
const http = new HttpMetrics();
const cells = () =>
  run("svc cells: http.count + gateway.completed", (i) => {
    http.count(route, 200, "openai");
    gw.completed(route, "up", "gpt-x", 10, 5, 20, (i & 1023) / 10);
  });

const reg = new Registry();
const req = new Counter({ name: "r", help: "r", labelNames: ["route", "status_class", "protocol"], registers: [reg] });
const dur = new Histogram({ name: "d", help: "d", labelNames: ["route", "model", "provider"], buckets: DURATION_BUCKETS, registers: [reg] });
const tok = new Counter({ name: "t", help: "t", labelNames: ["direction", "model", "provider"], registers: [reg] });
const usd = new Counter({ name: "s", help: "s", labelNames: ["provider", "model"], registers: [reg] });
const b = { req: req.labels(route, "2xx", "openai"), dur: dur.labels(route, "gpt-x", "up"), tin: tok.labels("input", "gpt-x", "up"), tout: tok.labels("output", "gpt-x", "up"), usd: usd.labels("up", "gpt-x") };
const prom = () =>
  run("prom-client pre-bound children, same five updates", (i) => {
    b.req.inc();
    b.dur.observe((i & 1023) / 10000);
    b.tin.inc(10);
    b.tout.inc(5);
    b.usd.inc(0.00002);
  });

const r: Record<string, number[]> = { cells: [], prom: [] };
for (let round = 0; round < 3; round++) {
  r.cells.push(cells());
  r.prom.push(prom());
}
const med = (a: number[]) => a.sort((x, y) => x - y)[1];
console.log(`median: cells ${med(r.cells).toFixed(1)} ns, prom-client ${med(r.prom).toFixed(1)} ns per request`);
