// What the gateway reports to an observer (engines/metrics implements it): one call per finished
// request and one per refusal. Declared here, in the package that calls it, so the gateway never
// imports the metrics package (observers sit above the engines they watch).

/** The sink the gate and the pipeline call (GateOptions.metrics / PipelineOptions.metrics). */
export interface PipelineMetrics {
  /** a request that reached a provider ended (success, upstream failure or cancellation) */
  completed(route: string, provider: string, model: string, inputTokens: number, outputTokens: number, costMicros: number, ms: number): void;
  /** a request failed before or while forwarding; counted when it is a limit refusal */
  refused(e: unknown): void;
}
