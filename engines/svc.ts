// The running svc: everything routes and controllers share, built once by api/server.ts.
import type { OpenedDb } from "../prisma/client";
import type { ResourceStore } from "../prisma/resource-store";
import type { ServerSpec } from "../schemas/kinds/server";
import type { Ref } from "../prisma/resource-store";
import type { Gateway } from "./gateway";
import type { ModelPool } from "./inference/pool";
import type { ToolRegistry } from "./tools/types";
import type { McpEngine } from "./mcp/engine";
import type { Agents } from "./agents";
import type { Metrics } from "./metrics";
import type { Pairing } from "./pairing";
import type { Media } from "./media";
import type { MemoryEngine } from "./memory/engine";

/** What engines log through. api/log.ts implements it over pino: JSON lines on stdout (human
 * lines on a terminal), filtered by --log-level / SVC_LOG_LEVEL, with secret-looking fields and
 * anything shaped like a key redacted; so fields may be passed as they are. */
export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export interface Svc {
  /** data dir: ~/.svc, SVC_HOME, or under SVC_TEST_ROOT */
  home: string;
  modelsDir: string;
  db: OpenedDb;
  store: ResourceStore;
  log: Logger;
  /** effective Server settings (Server manifest with defaults); updated by the Server controller */
  server: ServerSpec;
  /** engines, attached by api/server.ts (and the Model controller, for the pool) */
  engines: Engines;
  /** the running control plane, attached once the controllers run */
  control?: ControlPlane;
}

/** The typed registry of running engines. Each is optional: an engine that failed to start is
 * absent, and the routes that need it answer 503 saying so. */
export interface Engines {
  gateway?: Gateway;
  /** local GGUF models; created by the Model controller on first need */
  pool?: ModelPool;
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

export type WaitState = "ready" | "not-implemented" | "deleted" | "pending";

export interface WaitItem {
  kind: string;
  name: string;
  /** generation waited for; absent when waiting for deletion */
  generation?: number;
  state: WaitState;
  reason?: string;
  message?: string;
}

export interface WaitResult {
  /** every object Ready at its generation (or deleted); NotImplemented kinds count as settled */
  ready: boolean;
  timedOut: boolean;
  objects: WaitItem[];
}

/** What engines and routes may ask of the controllers (controllers/runtime.ts implements the
 * reconcile side; api/server.ts assembles this). */
export interface ControlPlane {
  /** wake the controller of one object */
  enqueue(ref: Ref): void;
  waitForReady(refs: Ref[], generationByRef: Map<string, number> | Record<string, number>, timeoutMs: number): Promise<WaitResult>;
  /** kind -> which engine's controller reconciles it */
  owners: Record<string, string>;
  listenUrl(): string;
}
