// The controller contract, after controller-runtime: one small interface per kind.
import type { ResourceStore, StoredObject, Ref, Condition } from "../prisma/resource-store";
import type { ServerSpec } from "../schemas/kinds/server";
import type { ProviderSpec } from "../schemas/kinds/provider";
import type { ModelSpec } from "../schemas/kinds/model";
import type { PolicyDocument } from "../schemas/kinds/access-policy";
import type { ApiKeySpec } from "../schemas/kinds/api-key";
import type { AgentSpec } from "../schemas/kinds/agent";
import type { McpServerSpec } from "../schemas/kinds/mcp-server";
import type { MemoryConfigSpec } from "../schemas/kinds/memory-config";
import type { AlertSettingsSpec } from "../schemas/kinds/alert-settings";

/** The spec type of each kind (validated against its schema before it reaches the store). */
export interface KindSpecs {
  Server: ServerSpec;
  Provider: ProviderSpec;
  Model: Partial<ModelSpec>;
  AccessPolicy: PolicyDocument;
  ApiKey: ApiKeySpec;
  Agent: AgentSpec;
  McpServer: McpServerSpec;
  MemoryConfig: MemoryConfigSpec;
  AlertSettings: Partial<AlertSettingsSpec>;
}

/** A stored object whose spec has its kind's type. */
export type ObjectOf<S> = Omit<StoredObject, "spec"> & { spec: S };

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

export interface Controller<S = any> {
  kind: string;
  /** Converge actual to desired for `obj` (never deleting). Return the Ready condition. */
  reconcile(obj: ObjectOf<S>, ctx: ReconcileContext): Promise<ReadyCondition & ReconcileResult>;
  /** Clean up an object being deleted (close a connection, unload a model). Default: nothing. */
  finalize?(obj: ObjectOf<S>, ctx: ReconcileContext): Promise<void>;
  /**
   * Feed the object to its engine, synchronously, in the same tick as the store write (the runtime
   * calls it inside its store listener, before the reconcile is queued, on every replica whether it
   * holds the reconciler lease or not). `obj` is undefined once the object is gone or being
   * deleted. This is the one path from the store to an engine's in-memory index: a revoked key
   * is refused on its very next request. Must not throw.
   */
  project?(name: string, obj: ObjectOf<S> | undefined): void;
  /** For a Ready=False condition that cannot change until the operator acts (set a variable and
   * restart, write a file, apply the missing object): that fix. `apply --wait` stops on it at once
   * instead of waiting out its timeout. undefined: the condition may still change by itself. */
  terminal?(cond: { reason: string; message: string }): string | undefined;
  /** Kinds whose desired-state changes re-queue every object of this kind (an Agent is checked
   * again when a Provider or Model changes). */
  watches?: readonly string[];
}

/** The controller of one kind, typed by that kind's spec. */
export type KindController<K extends keyof KindSpecs> = Controller<KindSpecs[K]> & { kind: K };

export type { Ref, StoredObject };
