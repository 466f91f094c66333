// The metrics engine: one prom-client Registry per running svc (never the global default
// registry, so several svc in one process keep apart), scraped by GET /metrics (api/routes/metrics.ts).
// Hot-path counters (HTTP requests, gateway durations, tokens, spend) are cells (cells.ts);
// gauges (queue depths, leases, tasks) are read from the engines at scrape time, never updated
// on the request path.
import type { EventEmitter } from "node:events";
import { Counter, Gauge, Registry } from "prom-client";
import type { Host } from "../host";
import type { ModelPool } from "../inference/pool";
import type { Agents } from "../agents";

/** What metrics reads of other engines (structural, so metrics imports no engine that imports it) */
type MetricsHost = Host & { engines: { pool?: ModelPool; agents?: Agents; gateway?: { router: { deploymentStats(): DeploymentStats[] }; cache?: { counters: CacheCountersOf } } } };
import type { Ref } from "../../prisma/resource-store";
import { HttpMetrics } from "./http";
import { GatewayMetrics } from "./gateway";
import { processRegistry } from "./process";
import { registerCacheMetrics, type CacheCountersOf } from "./cache";
import type { DeploymentStats } from "../providers/balancer";

export type { PipelineMetrics } from "./gateway";

const TASK_STATES = ["queued", "running", "input_required"] as const;

export class Metrics {
  readonly registry = new Registry();
  readonly http = new HttpMetrics();
  readonly gateway = new GatewayMetrics();
  private readonly reconciles: Counter<"kind" | "result">;
  private readonly toolCalls: Counter<"service" | "outcome">;

  constructor(private readonly svc: MetricsHost) {
    const r = this.registry;
    for (const f of [this.http.requests, this.gateway.duration, this.gateway.tokens, this.gateway.spend, this.gateway.refusals]) r.registerMetric(f as never);
    this.reconciles = new Counter({ name: "svc_reconcile_total", help: "Controller reconciles by kind and result (success|failure); a failure is retried with backoff.", labelNames: ["kind", "result"], registers: [r] });
    this.toolCalls = new Counter({ name: "svc_mcp_tool_calls_total", help: "Tool calls by service (McpServer name, or builtin) and outcome (success, tool_error, or the error code).", labelNames: ["service", "outcome"], registers: [r] });

    const pool = () => this.svc.engines.pool?.stats().models ?? [];
    new Gauge({
      name: "svc_inference_queue_depth",
      help: "Generations waiting for a sequence of a loaded local model.",
      labelNames: ["model"],
      registers: [r],
      collect() {
        this.reset();
        for (const m of pool()) this.set({ model: m.name }, m.queued);
      },
    });
    new Gauge({
      name: "svc_inference_leases",
      help: "Sequences of a loaded local model leased to running generations.",
      labelNames: ["model"],
      registers: [r],
      collect() {
        this.reset();
        for (const m of pool()) this.set({ model: m.name }, m.activeLeases);
      },
    });
    new Gauge({
      name: "svc_inference_models_loaded",
      help: "Local models loaded in memory.",
      registers: [r],
      collect() {
        this.set(pool().length);
      },
    });
    // load-balanced deployments (engines/providers/balancer.ts), read at scrape time
    const deployments = () => this.svc.engines.gateway?.router.deploymentStats() ?? [];
    const dep = (name: string, help: string, value: (d: DeploymentStats) => number | null, counter = false, extra: "strategy" | null = null) => {
      const labelNames = extra ? ["model", "provider", extra] : ["model", "provider"];
      const collect = function (this: Gauge | Counter) {
        this.reset();
        for (const d of deployments()) {
          const v = value(d);
          if (v === null) continue;
          const labels: Record<string, string> = { model: d.model, provider: d.provider };
          if (extra) labels[extra] = d[extra];
          if (this instanceof Counter) this.inc(labels, v);
          else (this as Gauge).set(labels, v);
        }
      };
      return counter ? new Counter({ name, help, labelNames, registers: [r], collect }) : new Gauge({ name, help, labelNames, registers: [r], collect });
    };
    dep("svc_router_deployment_weight", "Weight of a deployment (a Provider serving a load-balanced model), with the model's strategy.", (d) => d.weight, false, "strategy");
    dep("svc_router_deployment_in_flight", "Requests a deployment is answering now.", (d) => d.inFlight);
    dep("svc_router_deployment_requests_total", "Tries sent to a deployment (retries included).", (d) => d.requests, true);
    dep("svc_router_deployment_failures_total", "Tries of a deployment that failed (429, 5xx, timeouts, refused connections, broken streams).", (d) => d.failures, true);
    dep("svc_router_deployment_latency_seconds", "Moving average (EWMA) of a deployment's time to the first answer event.", (d) => d.latencySeconds);
    dep("svc_router_deployment_cooldown_seconds", "Seconds until a cooled-down deployment is used again (0: in service).", (d) => d.coolingSeconds);

    registerCacheMetrics(r, () => this.svc.engines.gateway?.cache?.counters());

    const tasks = () => this.svc.engines.agents?.tasks.statusCounts();
    new Gauge({
      name: "svc_agent_tasks",
      help: "Unfinished detached agent tasks by status (queued, running, input_required).",
      labelNames: ["status"],
      registers: [r],
      collect() {
        const c = tasks();
        for (const s of TASK_STATES) this.set({ status: s }, c?.[s] ?? 0);
      },
    });
  }

  /** Count reconcile results from the controller manager's events (controllers/runtime.ts). */
  watch(manager: EventEmitter): void {
    manager.on("reconciled", (ref: Ref) => this.reconciles.inc({ kind: ref.kind, result: "success" }));
    manager.on("failed", (ref: Ref) => this.reconciles.inc({ kind: ref.kind, result: "failure" }));
  }

  toolCall(service: string, outcome: string): void {
    this.toolCalls.inc({ service, outcome });
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The Prometheus text: this svc's metrics, then the process's. */
  async scrape(): Promise<string> {
    const [own, proc] = await Promise.all([this.registry.metrics(), processRegistry().metrics()]);
    return own + "\n" + proc;
  }
}

export function createMetrics(svc: MetricsHost): Metrics {
  return new Metrics(svc);
}
