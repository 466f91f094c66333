// The running svc: everything routes and controllers share, built once by api/server.ts.
import type { OpenedDb } from "../prisma/client";
import type { ResourceStore } from "../prisma/resource-store";
import type { ServerSpec } from "../schemas/kinds/server";

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
  /** engines, attached by api/server.ts; typed loosely here so each engine owns its own file */
  engines: Record<string, unknown>;
}
