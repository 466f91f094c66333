// What an engine may use of the running svc: its data dir, store, log, effective Server settings
// and the control plane. Engines that call other engines name those in their own host type
// (e.g. engines/agents: Host & {engines: {gateway?: Gateway; ...}}); the whole Svc (engines/svc.ts)
// satisfies every one of them.
import type { OpenedDb } from "../prisma/client";
import type { ResourceStore, Ref } from "../prisma/resource-store";
import type { ServerSpec } from "../schemas/kinds/server";

/** What engines log through. api/log.ts implements it over pino: JSON lines on stdout (human
 * lines on a terminal), filtered by --log-level / SVC_LOG_LEVEL, with secret-looking fields and
 * anything shaped like a key redacted; so fields may be passed as they are. */
export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export interface Host {
  /** data dir: ~/.svc, SVC_HOME, or under SVC_TEST_ROOT */
  home: string;
  modelsDir: string;
  db: OpenedDb;
  store: ResourceStore;
  log: Logger;
  /** effective Server settings (Server manifest with defaults); updated by the Server controller */
  server: ServerSpec;
  /** the running control plane, attached once the controllers run */
  control?: ControlPlane;
}

/** "failed": Ready=False for a reason its controller marks terminal (it will not change until the
 * operator acts), so waiting longer is pointless. */
export type WaitState = "ready" | "not-implemented" | "deleted" | "pending" | "failed";

export interface WaitItem {
  kind: string;
  name: string;
  /** generation waited for; absent when waiting for deletion */
  generation?: number;
  state: WaitState;
  reason?: string;
  message?: string;
  /** for a failed object: what the operator has to do */
  fix?: string;
}

export interface WaitResult {
  /** every object Ready at its generation (or deleted); NotImplemented kinds count as settled */
  ready: boolean;
  timedOut: boolean;
  objects: WaitItem[];
  /** how long the wait was allowed to take, and how long it took (ms) */
  timeoutMs?: number;
  waitedMs?: number;
}

/** What engines and routes may ask of the controllers (controllers/runtime.ts implements the
 * reconcile side; boot/start.ts assembles this). */
export interface ControlPlane {
  /** wake the controller of one object */
  enqueue(ref: Ref): void;
  waitForReady(refs: Ref[], generationByRef: Map<string, number> | Record<string, number>, timeoutMs: number): Promise<WaitResult>;
  /** kind -> which engine's controller reconciles it */
  owners: Record<string, string>;
  listenUrl(): string;
}
