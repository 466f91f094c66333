// The reconcile runtime, after controller-runtime: a work queue keyed by Kind/name with
// de-duplication, a small worker pool, periodic resync, exponential backoff on failure, and the
// Ready condition written on every exit. Level-triggered: whatever woke a key, its controller
// reads the current object and converges.
import { EventEmitter } from "node:events";
import type { ResourceStore, StoredObject, Ref, ObjectStatus, Condition } from "../prisma/resource-store";
import type { Logger, WaitItem, WaitResult, WaitState } from "../engines/svc";
import type { Controller, ReadyCondition, ReconcileContext } from "./types";
import { NOT_IMPLEMENTED } from "./kinds/accepted";
import { redactSecrets } from "../engines/secrets/redact";

export interface ManagerOptions {
  store: ResourceStore;
  controllers: Controller[];
  /** used for kinds no controller claims */
  fallback: Controller;
  log: Logger;
  /** reconciles running at once (default 4) */
  concurrency?: number;
  /** resync every object this often; also re-reads the store file (default 30 s, 0 = off) */
  resyncMs?: number;
  /** first retry delay after a thrown error (default 500 ms), doubling up to backoffMaxMs (60 s) */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
}

export type { WaitState, WaitItem, WaitResult } from "../engines/svc";

const keyOf = (r: Ref) => `${r.kind}/${r.name}`;

/**
 * Events: "reconciled" (ref, condition), "failed" (ref, error, retryInMs), "purged" (ref).
 */
export class ControllerManager extends EventEmitter {
  private readonly store: ResourceStore;
  private readonly byKind = new Map<string, Controller>();
  /** controllers that watch other kinds */
  private readonly watchers: Controller[] = [];
  private readonly fallback: Controller;
  private readonly log: Logger;
  private readonly concurrency: number;
  private readonly resyncMs: number;
  private readonly backoffBaseMs: number;
  private readonly backoffMaxMs: number;

  private readonly refs = new Map<string, Ref>();
  private readonly queue: string[] = [];
  private readonly queued = new Set<string>();
  private readonly active = new Map<string, Promise<void>>();
  /** keys enqueued while being reconciled: they run once more afterwards */
  private readonly again = new Set<string>();
  private readonly timers = new Map<string, { due: number; timer: NodeJS.Timeout }>();
  private readonly failures = new Map<string, number>();
  /** the Ready=False reason last logged for a key, so each change is one warn line, not one per resync */
  private readonly notReady = new Map<string, string>();
  private idleWaiters: Array<() => void> = [];
  private resyncTimer: NodeJS.Timeout | null = null;
  private resyncing = false;
  private started = false;
  private stopped = false;
  private attached = false;
  /** One store listener: project into the engines (always), then queue the reconcile (only while
   * this replica runs the controllers). */
  private readonly onChange = (refs: Ref[]) => {
    for (const r of refs) this.project(r);
    if (!this.started || this.stopped) return;
    for (const r of refs) this.enqueue(r);
    for (const c of this.watchers) {
      if (!refs.some((r) => c.watches!.includes(r.kind))) continue;
      for (const o of this.store.list({ kind: c.kind })) this.enqueue(o);
    }
  };

  constructor(opts: ManagerOptions) {
    super();
    this.setMaxListeners(1000);
    this.store = opts.store;
    for (const c of opts.controllers) if (!this.byKind.has(c.kind)) this.byKind.set(c.kind, c);
    for (const c of this.byKind.values()) if (c.watches?.length) this.watchers.push(c);
    this.fallback = opts.fallback;
    this.log = opts.log;
    this.concurrency = Math.max(1, opts.concurrency ?? 4);
    this.resyncMs = opts.resyncMs ?? 30_000;
    this.backoffBaseMs = opts.backoffBaseMs ?? 500;
    this.backoffMaxMs = opts.backoffMaxMs ?? 60_000;
  }

  controllerFor(kind: string): Controller {
    return this.byKind.get(kind) ?? this.fallback;
  }

  /**
   * Feed the engines: every stored object of a kind whose controller projects is handed to it now
   * (the engines' initial load), and every later store change synchronously. Independent of
   * start/stop: a replica that does not hold the reconciler lease still keeps its engines current.
   */
  attach(): void {
    if (this.attached) return;
    this.attached = true;
    for (const c of this.byKind.values()) {
      if (!c.project) continue;
      for (const o of this.store.list({ kind: c.kind })) this.project(o);
    }
    this.store.on("change", this.onChange);
  }

  /** Stop feeding the engines (shutdown). */
  detach(): void {
    if (!this.attached) return;
    this.attached = false;
    this.store.off("change", this.onChange);
  }

  private project(ref: Ref): void {
    const ctl = this.byKind.get(ref.kind);
    if (!ctl?.project) return;
    const o = this.store.get(ref.kind, ref.name);
    try {
      ctl.project(ref.name, o && !o.deleting ? o : undefined);
    } catch (e) {
      this.log.warn("projection failed", { kind: ref.kind, name: ref.name, err: errText(e) });
    }
  }

  /** Queue every stored object once, and each one a store change touches from now on. */
  start(): void {
    if (this.started && !this.stopped) return;
    this.started = true;
    this.stopped = false; // scale-out: started again when this replica takes the lease back
    this.attach();
    for (const o of this.store.list({ includeDeleting: true })) this.enqueue(o);
    if (this.resyncMs > 0) {
      this.resyncTimer = setInterval(() => void this.resync(), this.resyncMs);
      this.resyncTimer.unref();
    }
  }

  /** Re-read the store file (another process, e.g. an offline `svc config apply`, may have
   * written it) and queue every object: level-triggered convergence even if an event was missed. */
  async resync(): Promise<void> {
    if (this.resyncing || this.stopped) return;
    this.resyncing = true;
    try {
      await this.store.reload();
    } catch (e) {
      this.log.warn("store reload failed", { err: errText(e) });
    } finally {
      this.resyncing = false;
    }
    for (const o of this.store.list({ includeDeleting: true })) this.enqueue(o);
  }

  /** Queue a key. A key already queued is not queued twice; a key being reconciled runs again after. */
  enqueue(ref: Ref): void {
    if (this.stopped) return;
    const key = keyOf(ref);
    if (!this.refs.has(key)) this.refs.set(key, { kind: ref.kind, name: ref.name });
    if (this.active.has(key)) {
      this.again.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    this.queued.add(key);
    this.queue.push(key);
    this.pump();
  }

  /** Queue a key after a delay; an earlier pending timer for the key wins. */
  enqueueAfter(ref: Ref, ms: number): void {
    if (this.stopped) return;
    const key = keyOf(ref);
    if (!this.refs.has(key)) this.refs.set(key, { kind: ref.kind, name: ref.name });
    const due = Date.now() + ms;
    const cur = this.timers.get(key);
    if (cur && cur.due <= due) return;
    if (cur) clearTimeout(cur.timer);
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.enqueue(this.refs.get(key)!);
    }, ms);
    timer.unref();
    this.timers.set(key, { due, timer });
  }

  /** Resolves when nothing is queued or running (delayed retries may still be pending). */
  idle(): Promise<void> {
    if (this.queue.length === 0 && this.active.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Consecutive failures of a key (0 after a success). */
  failureCount(ref: Ref): number {
    return this.failures.get(keyOf(ref)) ?? 0;
  }

  private pump(): void {
    while (!this.stopped && this.active.size < this.concurrency && this.queue.length > 0) {
      const key = this.queue.shift()!;
      this.queued.delete(key);
      const run = this.run(key).finally(() => {
        this.active.delete(key);
        if (this.again.delete(key)) this.enqueue(this.refs.get(key)!);
        this.pump();
        if (this.queue.length === 0 && this.active.size === 0) {
          const w = this.idleWaiters;
          this.idleWaiters = [];
          for (const f of w) f();
        }
      });
      this.active.set(key, run);
    }
  }

  private async run(key: string): Promise<void> {
    const ref = this.refs.get(key)!;
    const obj = this.store.get(ref.kind, ref.name);
    if (!obj) {
      // Purged (or never existed): nothing to converge and nothing to retry.
      this.failures.delete(key);
      this.clearTimer(key);
      return;
    }
    const ctl = this.controllerFor(obj.kind);
    const ctx: ReconcileContext = {
      store: this.store,
      log: (msg) => this.log.info(msg, { kind: obj.kind, name: obj.name }),
    };
    try {
      if (obj.deleting) {
        // Let the controller clean up (unload a model, close a connection) before the row goes.
        if (ctl.finalize) await ctl.finalize(obj, ctx);
        await this.store.purge(obj.kind, obj.name);
        this.failures.delete(key);
        this.notReady.delete(key);
        this.clearTimer(key);
        this.emit("purged", ref);
        return;
      }
      const res = await ctl.reconcile(obj, ctx);
      const cond: ReadyCondition = {
        status: res?.status ?? "Unknown",
        reason: res?.reason ?? "NoResult",
        message: res?.message ?? "",
        extra: res?.extra,
      };
      this.writeStatus(obj, cond, false);
      this.noteReadiness(key, obj, cond);
      this.failures.delete(key);
      this.emit("reconciled", ref, cond);
      if (res?.requeueAfterMs && res.requeueAfterMs > 0) this.enqueueAfter(ref, res.requeueAfterMs);
    } catch (e) {
      const n = (this.failures.get(key) ?? 0) + 1;
      this.failures.set(key, n);
      const delay = Math.min(this.backoffMaxMs, this.backoffBaseMs * 2 ** Math.min(n - 1, 30));
      const message = `${errText(e)} (attempt ${n}; retrying in ${formatMs(delay)})`;
      this.writeStatus(obj, { status: "False", reason: obj.deleting ? "FinalizeFailed" : "ReconcileError", message }, true);
      this.log.warn(obj.deleting ? "finalize failed" : "reconcile failed", { kind: obj.kind, name: obj.name, attempt: n, retryInMs: delay, err: errText(e) });
      this.emit("failed", ref, e, delay);
      this.enqueueAfter(ref, delay);
    }
  }

  /** Status is data the controller writes: observedGeneration plus the Ready condition. */
  private writeStatus(obj: StoredObject, cond: ReadyCondition, keepExtra: boolean): void {
    const cur = this.store.get(obj.kind, obj.name);
    if (!cur) return;
    const prevStatus: ObjectStatus = cur.status ?? {};
    const prev = prevStatus.conditions?.find((c) => c.type === "Ready");
    const ready: Condition = {
      type: "Ready",
      status: cond.status,
      reason: cond.reason,
      // the one place conditions are written: a service's echoed secret never reaches status
      message: redactSecrets(cond.message),
      // changes only when the status flips, as in Kubernetes
      lastTransitionTime: prev && prev.status === cond.status ? prev.lastTransitionTime : new Date().toISOString(),
    };
    const base: Record<string, unknown> = {};
    if (keepExtra) {
      for (const [k, v] of Object.entries(prevStatus)) if (k !== "observedGeneration" && k !== "conditions") base[k] = v;
    }
    const status: ObjectStatus = {
      ...base,
      ...(cond.extra ?? {}),
      observedGeneration: obj.generation,
      conditions: [ready, ...(prevStatus.conditions ?? []).filter((c) => c.type !== "Ready")],
    };
    // An identical status is already written: skip the store flush (resync touches every object).
    if (JSON.stringify(status) === JSON.stringify(prevStatus)) return;
    this.store.setStatus(obj.kind, obj.name, status);
  }

  /** An object that turns not Ready (or not Ready for another reason) is one warn line: an
   * operator reading the log sees a credential go missing or a key's webhook secret vanish. */
  private noteReadiness(key: string, obj: StoredObject, cond: ReadyCondition): void {
    if (cond.status !== "False" || cond.reason === NOT_IMPLEMENTED) {
      this.notReady.delete(key);
      return;
    }
    if (this.notReady.get(key) === cond.reason) return;
    this.notReady.set(key, cond.reason);
    this.log.warn(`${obj.kind}/${obj.name} is not Ready: ${cond.reason}`, { kind: obj.kind, name: obj.name, reason: cond.reason, message: redactSecrets(cond.message) });
  }

  private clearTimer(key: string): void {
    const t = this.timers.get(key);
    if (t) clearTimeout(t.timer);
    this.timers.delete(key);
  }

  /**
   * Wait until every ref is Ready at (at least) its generation, or gone when it has no entry in
   * generationByRef (a delete). Objects whose kind has no engine in this build (NotImplemented)
   * settle without being Ready and are reported as such. An object Ready=False for a reason its
   * controller marks terminal ends the wait at once (state "failed", with the fix).
   */
  waitForReady(refs: Ref[], generationByRef: Map<string, number> | Record<string, number>, timeoutMs: number): Promise<WaitResult> {
    const genOf = (r: Ref) =>
      generationByRef instanceof Map ? generationByRef.get(keyOf(r)) : (generationByRef as Record<string, number>)[keyOf(r)];
    const check = (): WaitItem[] =>
      refs.map((r) => {
        const gen = genOf(r);
        const obj = this.store.get(r.kind, r.name);
        const base = { kind: r.kind, name: r.name, ...(gen !== undefined ? { generation: gen } : {}) };
        if (gen === undefined) return { ...base, state: obj ? "pending" : "deleted", ...(obj ? { reason: "Deleting", message: "waiting for cleanup" } : {}) };
        if (!obj) return { ...base, state: "pending", reason: "NotFound", message: "object not in the store" };
        const ready = obj.status?.conditions?.find((c) => c.type === "Ready");
        const observed = (obj.status?.observedGeneration ?? 0) >= gen;
        if (!observed || !ready) return { ...base, state: "pending", reason: ready?.reason ?? "Pending", message: ready?.message ?? "not reconciled yet" };
        if (ready.status === "True") return { ...base, state: "ready", reason: ready.reason, message: ready.message };
        if (ready.reason === NOT_IMPLEMENTED) return { ...base, state: "not-implemented", reason: ready.reason, message: ready.message };
        const fix = ready.status === "False" ? this.controllerFor(r.kind).terminal?.({ reason: ready.reason, message: ready.message }) : undefined;
        if (fix) return { ...base, state: "failed", reason: ready.reason, message: ready.message, fix };
        return { ...base, state: "pending", reason: ready.reason, message: ready.message };
      });
    const started = Date.now();
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | null = null;
      const finish = (timedOut: boolean) => {
        this.store.off("status", onEvent);
        this.store.off("change", onEvent);
        this.off("purged", onEvent);
        this.off("reconciled", onEvent);
        if (timer) clearTimeout(timer);
        const objects = check();
        const ready = objects.every((o) => o.state !== "pending" && o.state !== "failed");
        resolve({ ready, timedOut, objects, timeoutMs, waitedMs: Date.now() - started });
      };
      // settled when nothing is pending, or at once when one object can no longer become Ready
      const settled = () => {
        const items = check();
        return items.some((o) => o.state === "failed") || items.every((o) => o.state !== "pending");
      };
      const onEvent = () => {
        if (settled()) finish(false);
      };
      if (settled()) return finish(false);
      this.store.on("status", onEvent);
      this.store.on("change", onEvent);
      this.on("purged", onEvent);
      this.on("reconciled", onEvent);
      timer = setTimeout(() => finish(true), timeoutMs);
    });
  }

  /** Stop taking work and wait for running reconciles to finish. The engines keep following the
   * store (a replica that lost the lease still serves); detach() ends that. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    for (const t of this.timers.values()) clearTimeout(t.timer);
    this.timers.clear();
    this.queue.length = 0;
    this.queued.clear();
    this.again.clear();
    await Promise.allSettled([...this.active.values()]);
    const w = this.idleWaiters;
    this.idleWaiters = [];
    for (const f of w) f();
  }
}

export function errText(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}

function formatMs(ms: number): string {
  return ms >= 1000 ? `${Math.round(ms / 100) / 10}s` : `${ms}ms`;
}
