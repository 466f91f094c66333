// The running svc: everything routes and controllers share, built once at start-up (boot/start.ts).
// Engines see only its core (engines/host.ts) plus the engines they call, typed where they are
// used, so this aggregate of every engine imports engines and no engine imports it.
import type { Host } from "./host";
import type { Gateway } from "./gateway";
import type { ModelPool } from "./inference/pool";
import type { ModelDownloads } from "./inference/download";
import type { ToolRegistry } from "./tools/types";
import type { McpEngine } from "./mcp/engine";
import type { Agents } from "./agents";
import type { Metrics } from "./metrics";
import type { Pairing } from "./pairing";
import type { Media } from "./media";
import type { MemoryEngine } from "./memory/engine";

export type { Logger, ControlPlane, WaitItem, WaitResult, WaitState, Host } from "./host";

export interface Svc extends Host {
  /** engines, attached at start-up (and by the Model controller, for the pool) */
  engines: Engines;
  /** what start-up is still loading (boot/starting.ts), for /health, /ready and `svc status` */
  readiness?: { loading(): string[]; step<T>(label: string, fn: () => Promise<T> | T): Promise<T> };
}

/** The typed registry of running engines. Each is optional: an engine that failed to start is
 * absent, and the routes that need it answer 503 saying so. */
export interface Engines {
  gateway?: Gateway;
  /** local GGUF models; created by the Model controller on first need */
  pool?: ModelPool;
  /** Model downloads (spec.source, `svc models pull`, /api/pull); created on first need */
  downloads?: ModelDownloads;
  /** the tool catalog: MCP services' tools and svc's built-ins (engines/mcp) */
  tools?: ToolRegistry;
  /** the same object as `tools` seen from its controller's side: McpServer connections */
  mcp?: McpEngine;
  /** custom agents, synchronous runs and detached tasks (engines/agents) */
  agents?: Agents;
  /** Prometheus metrics of this svc (engines/metrics), scraped by GET /metrics */
  metrics?: Metrics;
  /** pairing state, the server identity and secure-channel sessions (engines/pairing) */
  pairing?: Pairing;
  /** media routes' providers and jobs (engines/media) */
  media?: Media;
  /** agent memory: buffering, distillation, recall, consolidation (engines/memory) */
  memory?: MemoryEngine;
}

