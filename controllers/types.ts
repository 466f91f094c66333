// The controller contract, after controller-runtime: one small interface per kind.
import type { ResourceStore, StoredObject, Ref, Condition } from "../prisma/resource-store";

export interface ReconcileResult {
  /** reconcile again after this many ms (level-triggered polling, e.g. to watch expiry) */
  requeueAfterMs?: number;
}

/** What a reconcile decided about its object; written to status on every exit. */
export interface ReadyCondition {
  status: Condition["status"];
  reason: string;
  message: string;
  /** extra status fields, e.g. {loaded: true, tools: 13} */
  extra?: Record<string, unknown>;
}

export interface ReconcileContext {
  store: ResourceStore;
  log: (msg: string) => void;
}

export interface Controller {
  kind: string;
  /** Converge actual to desired for `obj` (never deleting). Return the Ready condition. */
  reconcile(obj: StoredObject, ctx: ReconcileContext): Promise<ReadyCondition & ReconcileResult>;
  /** Clean up an object being deleted (close a connection, unload a model). Default: nothing. */
  finalize?(obj: StoredObject, ctx: ReconcileContext): Promise<void>;
}

export type { Ref, StoredObject };
