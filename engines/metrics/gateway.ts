// What the gateway pipeline reports: one call per finished request (duration, tokens, spend by
// route/provider/model) and one per limit refusal. Hot path: three Map lookups to the request's
// pre-made cells, then number adds.
import { CellIndex, CounterFamily, HistogramFamily, type CounterCell, type HistogramCell } from "./cells";
import { LimitRefusal } from "../gateway/limits/refusal";
import type { PipelineMetrics } from "../gateway/metrics-sink";

export type { PipelineMetrics } from "../gateway/metrics-sink";

/** Seconds; model calls run from milliseconds (a cached local answer) to minutes (long streams). */
export const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

interface Bound {
  duration: HistogramCell;
  input: CounterCell;
  output: CounterCell;
  spend: CounterCell;
}

export class GatewayMetrics implements PipelineMetrics {
  readonly duration = new HistogramFamily(
    "svc_gateway_request_duration_seconds",
    "Time from admission to the end of the answer (streams included), per route, model and provider.",
    ["route", "model", "provider"],
    DURATION_BUCKETS,
  );
  readonly tokens = new CounterFamily("svc_gateway_tokens_total", "Tokens billed (the provider's usage, else the estimate), by direction (input|output), model and provider.", ["direction", "model", "provider"]);
  readonly spend = new CounterFamily("svc_gateway_spend_usd_total", "Spend in USD at the configured prices, by provider and model.", ["provider", "model"]);
  readonly refusals = new CounterFamily("svc_gateway_limit_refusals_total", "Requests refused by a key's limits, by kind (per_minute, budget_daily, tokens_monthly, max_requests, ...) and error code.", ["kind", "code"]);

  private readonly bound = new CellIndex<Bound>((route, provider, model) => ({
    duration: this.duration.cell(route, model, provider),
    // tokens and spend are per model/provider whatever the route: share their cells
    input: this.perModel.get("input", provider, model),
    output: this.perModel.get("output", provider, model),
    spend: this.spendCells.get(provider, model),
  }));
  private readonly perModel = new CellIndex<CounterCell>((direction, provider, model) => this.tokens.cell(direction, model, provider));
  private readonly spendCells = new CellIndex<CounterCell>((provider, model) => this.spend.cell(provider, model));
  private readonly refusalCells = new CellIndex<CounterCell>((kind, code) => this.refusals.cell(kind, code));

  completed(route: string, provider: string, model: string, inputTokens: number, outputTokens: number, costMicros: number, ms: number): void {
    const b = this.bound.get(route, provider, model);
    this.duration.observe(b.duration, ms / 1000);
    b.input.value += inputTokens;
    b.output.value += outputTokens;
    if (costMicros > 0) b.spend.value += costMicros / 1e6;
  }

  refused(e: unknown): void {
    if (!(e instanceof LimitRefusal)) return;
    this.refusalCells.get(refusalKind(e.code, e.tripped), e.code).value++;
  }
}

/** The kind of limit from a refusal's `limit` ("per_minute=5", "daily=1.00", "max_requests=3"):
 * budgets and token quotas share the period names, so those get a prefix. */
export function refusalKind(code: string, limit: string): string {
  const eq = limit.indexOf("=");
  const name = eq < 0 ? limit : limit.slice(0, eq);
  if (code === "budget_exceeded") return `budget_${name}`;
  if (code === "quota_exceeded" && (name === "daily" || name === "monthly")) return `tokens_${name}`;
  return name;
}
