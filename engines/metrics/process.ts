// Node's process metrics (CPU, memory, event loop lag, GC, handles) are per process, not per svc:
// they live in one registry made on the first scrape, shared by every svc in the process (tests
// start several), so each series appears once and no second collector is started.
import { Registry, collectDefaultMetrics } from "prom-client";

let shared: Registry | undefined;

export function processRegistry(): Registry {
  if (!shared) {
    shared = new Registry();
    collectDefaultMetrics({ register: shared }); // standard names (process_*, nodejs_*), as dashboards expect
  }
  return shared;
}
