// The gate (docs/architecture.md "The gate", docs/gate.md): every route a key can call goes through it.
//   authenticate -> key use (IP allowlist, role, scope, permissions.actions) -> policy
//   (permissions.models, AccessPolicy statements, price for budgeted keys) -> limits (reserve)
//   -> [the route's call] -> settle -> audit entry -> alerts
// A route describes its call with a GateCall (action, scope, model, provider, resource, price) and
// gets a Verdict back, which it hands to finish() once the call is done. Chat, completions,
// responses, messages, Ollama and embeddings reach it through GatewayPipeline (pipeline.ts), which
// adds routing and streaming; media, tools, agents, memory and key management call it directly.
import { performance } from "node:perf_hooks";
import type { Caller } from "./pipeline-types";
import type { AuditRecord } from "./key-types";
import { SvcError } from "../errors";
import { AUTH_MESSAGES, SECRET_PREFIX, ipAllowed, tokenPrefix, type KeyCache, type KeyEntry } from "./keys";
import { SCOPE_BIT, scopeDenied, type Scope } from "./scopes";
import { accessRefusal, managementAccessAction, type AccessAction } from "./access-level";
import { evaluate, globMatch, type PolicyIndex } from "./policy";
import type { Admission, Limits } from "./limits";
import { PipelineAlerts, type AlertsSink } from "./pipeline-alerts";
import { auditRow, codeOf, reservationWritten, storeUnavailable, withRate } from "./pipeline-records";
import type { RateState } from "../errors";
import type { RouteTarget } from "../providers/types";
import type { PipelineMetrics } from "./metrics-sink";

export interface AuditSink {
  record(e: AuditRecord): void;
}

/** What a route asks of the gate: the internal descriptor of one call. */
export interface GateCall {
  /** the policy action: chat:completions, embeddings, media:<operation>, tools:call, agents:run, memory:<op>, ... */
  action: string;
  /** the key scope the call needs; null: key management and audit (any key; no policy, no limits) */
  scope: Scope | null;
  /** the audit log's name for the call (e.g. media.images.generations, tools.call) */
  audit: string;
  model?: string;
  provider?: string;
  /** a resource beyond model/provider: tool:<name> */
  resource?: string;
  /** counts against the key's rate limits, max_requests and budgets */
  metered?: boolean;
  /** reserved spend in micro-USD; undefined: the call has no price (refused for budgeted keys) */
  spendMicros?: number;
  /** why the call has no price, for the refusal of a budgeted key */
  unpriced?: string;
  /** metered as a request (rate limits, max_requests) but outside budgets (count_tokens) */
  unbudgeted?: boolean;
  /** the providers that could serve the call: the gate keeps those the key's policy allows
   * (Verdict.targets), so a route never picks a provider the policy denies */
  targets?: readonly RouteTarget[];
  metadata?: Record<string, unknown>;
}

/** The gate's answer for an admitted call (refusals are thrown). */
export interface Verdict {
  caller: Caller;
  /** null: unauthenticated loopback */
  key: KeyEntry | null;
  call: GateCall;
  adm?: Admission;
  /** the key's rate window after admission (api/ renders it as x-ratelimit-* headers) */
  rate?: RateState;
  /** GateCall.targets that the key's policy allows (all of them without a key or a policy) */
  targets?: readonly RouteTarget[];
  t0: number;
  ts: Date;
}

export interface Outcome {
  /** "success", "cancelled", "tool_error" or an error code */
  status: string;
  /** actual spend in micro-USD (default: the reservation for a success, 0 otherwise) */
  costMicros?: number;
  provider?: string;
  model?: string;
  metadata?: Record<string, unknown>;
}

export interface GateOptions {
  keys: KeyCache;
  policies: PolicyIndex;
  limits: Limits;
  audit?: AuditSink;
  alerts?: AlertsSink;
  metrics?: PipelineMetrics;
  /** Server.allowUnauthenticatedLoopback, read live */
  allowUnauthenticatedLoopback: () => boolean;
  now?: () => number;
}

export class Gate {
  readonly now: () => number;
  readonly alerts: PipelineAlerts;

  constructor(readonly o: GateOptions) {
    this.now = o.now ?? Date.now;
    this.alerts = new PipelineAlerts(o.alerts, o.limits);
  }

  // ------------------------------------------------------------------------------------------
  // authenticate and key use

  /** Who is calling: a key, or null for unauthenticated loopback. Throws 401 (audited under
   * `audit`, alerted). On unauthenticated loopback a token that is no known key and does not look
   * like an svc key (the "ollama" / "none" placeholders SDKs must send) is anonymous; an sk-svc-
   * token is always checked, so a revoked key stays refused on loopback too. */
  authenticate(caller: Caller, audit = "request", now = this.now()): KeyEntry | null {
    const token = caller.token;
    if (!token) {
      if (caller.loopback && this.o.allowUnauthenticatedLoopback()) return null;
      throw new SvcError("unauthenticated", "invalid_api_key", "missing API key: send Authorization: Bearer <key> (or x-api-key)");
    }
    const r = this.o.keys.authenticate(token, now);
    if (r.ok) return r.key;
    if (r.code === "invalid_api_key" && caller.loopback && !token.startsWith(SECRET_PREFIX) && this.o.allowUnauthenticatedLoopback()) return null;
    this.o.alerts?.failedAuth(tokenPrefix(token), caller.ip, r.key?.ref);
    const err = new SvcError("unauthenticated", r.code, AUTH_MESSAGES[r.code]);
    if (r.key) this.auditFailure(caller, r.key, audit, undefined, undefined, err, performance.now(), {});
    throw err;
  }

  /** Authenticate and judge the IP allowlist and the access level only, for routes that decide
   * the rest themselves (pairing's host operations; agent and task routes, whose runs and
   * dispatches then enter the gate): null on unauthenticated loopback, 401 for a bad key, 403 from
   * outside the key's allowlist or for a read_only key. The Caller is left unadmitted, so a gate
   * call made later for the same request still runs every key-use check. */
  identify(caller: Caller, level: AccessAction = "route"): KeyEntry | null {
    const key = this.authenticate(caller);
    if (key?.ipRanges && !ipAllowed(caller.ip, key.ipRanges)) {
      throw new SvcError("forbidden", "ip_not_allowed", `address ${caller.ip} is not in this key's IP allowlist`);
    }
    const refusal = accessRefusal(key, level);
    if (refusal) throw new SvcError("forbidden", "permission_denied", refusal);
    return key;
  }

  /** IP allowlist, access level, role, scope and permissions.actions: any use of a key for
   * `action`. `access` is what the access level judges (default: from the scope; key
   * management and audit pass theirs, from the call's audit name). */
  use(key: KeyEntry, caller: Caller, scope: Scope | null, action?: string, access?: AccessAction): void {
    if (key.ipRanges && !ipAllowed(caller.ip, key.ipRanges)) {
      throw new SvcError("forbidden", "ip_not_allowed", `address ${caller.ip} is not in this key's IP allowlist`);
    }
    // key management and audit are judged by the call's own audit name, in enter()
    const judged = access ?? (scope === null ? undefined : scope === "inference" ? "inference" : "route");
    const level = judged ? accessRefusal(key, judged) : null;
    if (level) throw new SvcError("forbidden", "permission_denied", level);
    if (scope === null) return; // management and audit: any key (the admin routes judge the role)
    if (key.role === "master") {
      throw new SvcError("forbidden", "permission_denied", `the master key can only create temporary keys; use an API key for ${USE[scope]}`);
    }
    if ((key.scopeBits & SCOPE_BIT[scope]) === 0) throw scopeDenied(scope);
    if (action && key.role === "key") this.actionAllowed(key, action);
  }

  /** permissions.actions, when the key lists them, must name the action (or "*"). */
  actionAllowed(key: KeyEntry, action: string): void {
    const actions = key.spec.permissions?.actions;
    if (actions && !actions.some((a) => a === "*" || a === action || (a.includes("*") && globMatch(a, action)))) {
      throw new SvcError("forbidden", "permission_denied", `action ${action} is not in this key's permissions.actions`);
    }
  }

  /** authenticate + use, before a body is read; a refused use is audited under `audit`. */
  admit(caller: Caller, scope: Scope | null, audit: string, action?: string): KeyEntry | null {
    const key = caller.key !== undefined ? caller.key : this.authenticate(caller, audit);
    if (key) {
      try {
        this.use(key, caller, scope, action);
      } catch (e) {
        this.auditFailure(caller, key, audit, undefined, undefined, e, performance.now(), {});
        throw e;
      }
    }
    caller.key = key;
    return key;
  }

  // ------------------------------------------------------------------------------------------
  // policy

  /** permissions.models, the key's policy statements and, for a budgeted key, a price; returns
   * the route targets the key may use (never empty). */
  authorize(key: KeyEntry, action: string, model: string, cands: readonly RouteTarget[], now: number): readonly RouteTarget[] {
    this.modelAllowed(key, model);
    this.actionAllowed(key, action);
    const kp = this.boundPolicy(key);
    let out = cands;
    if (kp.statements.length) {
      const monthSpendMicros = this.o.limits.monthSpend(key);
      let denial: string | undefined;
      out = cands.filter((t) => {
        const d = evaluate(kp.statements, { action, model, provider: t.provider, monthSpendMicros, now });
        if (!d.allowed) denial ??= d.message;
        return d.allowed;
      });
      if (out.length === 0) throw new SvcError("forbidden", "policy_denied", denial!, "model");
    }
    if (this.o.limits.needsPrice(key, now)) {
      const priced = out.filter((t) => t.priced);
      if (priced.length === 0) {
        throw new SvcError("forbidden", "permission_denied", `model ${JSON.stringify(model)} has no price configured (Provider ${out[0].provider}); keys with a budget may only use priced models`, "model");
      }
      out = priced;
    }
    return out;
  }

  private modelAllowed(key: KeyEntry, model: string | undefined): void {
    const models = key.spec.permissions?.models;
    if (models && model !== undefined && !models.some((g) => globMatch(g, model))) {
      throw new SvcError("forbidden", "permission_denied", `model ${JSON.stringify(model)} is not in this key's permissions.models`, "model");
    }
  }

  private boundPolicy(key: KeyEntry) {
    const kp = this.o.policies.forKey(key);
    if (kp.missing.length) {
      throw new SvcError("forbidden", "policy_denied", `access policy ${JSON.stringify(kp.missing[0])} bound to this key does not exist`);
    }
    return kp;
  }

  /** The policy step for a call that is not routed by model name (media, tools, agents, memory). */
  private authorizeCall(key: KeyEntry, c: GateCall, now: number): void {
    this.modelAllowed(key, c.model);
    this.actionAllowed(key, c.action);
    const kp = this.boundPolicy(key);
    // a call with candidate targets is judged per target's provider (allowedTargets)
    if (kp.statements.length && !c.targets) {
      const d = evaluate(kp.statements, { action: c.action, model: c.model, provider: c.provider, resource: c.resource, monthSpendMicros: this.o.limits.monthSpend(key), now });
      if (!d.allowed) throw new SvcError("forbidden", "policy_denied", d.message, c.resource ? null : c.model !== undefined ? "model" : null);
    }
    if (c.metered && c.spendMicros === undefined && this.o.limits.needsPrice(key, now)) {
      throw new SvcError("forbidden", "permission_denied", `${c.unpriced ?? `${c.action} has no price in svc`}; keys with a budget (their own, their team's or their organization's) may only make priced calls`, c.model !== undefined ? "model" : null);
    }
  }

  /** The call's targets whose provider the key's policy statements allow (403 when none is). */
  private allowedTargets(key: KeyEntry, c: GateCall, now: number): readonly RouteTarget[] {
    const kp = this.boundPolicy(key);
    const all = c.targets!;
    if (!kp.statements.length) return all;
    const monthSpendMicros = this.o.limits.monthSpend(key);
    let denial: string | undefined;
    const out = all.filter((t) => {
      const d = evaluate(kp.statements, { action: c.action, model: c.model, provider: t.provider, resource: c.resource, monthSpendMicros, now });
      if (!d.allowed) denial ??= d.message;
      return d.allowed;
    });
    if (out.length === 0 && all.length > 0) throw new SvcError("forbidden", "policy_denied", denial!, "model");
    return out;
  }

  // ------------------------------------------------------------------------------------------
  // one call: enter (authenticate, use, policy, limits) ... finish (settle, audit, alerts)

  /** Admit one call or throw the refusal (audited and alerted like a refused chat). */
  async enter(caller: Caller, c: GateCall): Promise<Verdict> {
    const t0 = performance.now();
    const now = this.now();
    const key = caller.key !== undefined ? caller.key : this.authenticate(caller, c.audit, now);
    caller.key = key;
    const v: Verdict = { caller, key, call: c, rate: undefined, targets: c.targets, t0, ts: new Date(now) };
    if (!key) return v;
    try {
      this.use(key, caller, c.scope, undefined, c.scope === null ? managementAccessAction(c.audit) : undefined);
      if (key.role !== "key" || c.scope === null) return v;
      this.authorizeCall(key, c, now);
      if (c.targets) v.targets = this.allowedTargets(key, c, now);
      if (c.metered) {
        const spend = c.spendMicros ?? 0;
        // a call through enter() has a known price (media units, a quote) or none: reserved whole
        const est = { spend, tokens: 0, requestTokens: 0, promptTokens: 0, priced: c.spendMicros !== undefined, known: spend > 0, unbudgeted: c.unbudgeted, model: c.model ?? c.resource ?? c.action };
        v.adm = this.o.limits.admit(key, est, now, {
          requestId: caller.requestId,
          action: c.audit,
          ip: caller.ip,
        });
        v.rate = this.o.limits.rate(key, now);
        if (v.adm.durable) await v.adm.durable.catch(storeUnavailable);
        if (v.adm.shared) v.rate = v.adm.shared.rate; // the shared store's verdict carries it
        if (v.adm.written) await reservationWritten(v.adm.written);
        this.alerts.admitted(key, v.rate, caller.ip);
      }
      return v;
    } catch (e) {
      this.refused(v, e);
      throw e;
    }
  }

  /** Settle the reservation and write the audit entry of a call the gate admitted. */
  finish(v: Verdict, o: Outcome): void {
    const ok = o.status === "success" || o.status === "tool_error";
    const cost = o.costMicros ?? (ok ? (v.call.spendMicros ?? 0) : 0);
    if (v.adm && !v.adm.settled) {
      this.o.limits.settle(v.adm, cost, 0, true);
      if (v.key && cost > 0) this.alerts.spent(v.key);
    }
    if (!v.key) return;
    const meta = o.metadata ?? v.call.metadata ?? {};
    this.o.audit?.record(auditRow(v.caller, v.key, v.ts, v.call.audit, o.model ?? v.call.model, o.provider ?? v.call.provider, o.status, v.t0, 0, 0, v.adm ? cost : 0, meta, ok ? undefined : o.status));
  }

  /** A call that failed after the gate admitted it: released, audited with its code. */
  failed(v: Verdict, e: unknown, info: Omit<Outcome, "status"> = {}): void {
    if (v.adm && !v.adm.settled) this.o.limits.settle(v.adm, 0, 0, false);
    this.finish(v, { ...info, status: codeOf(e), costMicros: 0 });
  }

  /** Run `f` as one admitted call: finish on success, failed() on error. */
  async run<T>(v: Verdict, f: () => Promise<T>, info: Omit<Outcome, "status"> = {}): Promise<T> {
    try {
      const r = await f();
      this.finish(v, { ...info, status: "success" });
      return r;
    } catch (e) {
      this.failed(v, e, info);
      throw e;
    }
  }

  private refused(v: Verdict, e: unknown): void {
    if (v.adm) this.o.limits.settle(v.adm, 0, 0, false);
    this.o.metrics?.refused(e);
    if (!v.key) return;
    withRate(e, v.rate ?? v.adm?.shared?.rate);
    this.auditFailure(v.caller, v.key, v.call.audit, v.call.model, v.call.provider, e, v.t0, v.call.metadata ?? {});
    this.alerts.refused(v.key, e);
  }

  auditFailure(caller: Caller, key: KeyEntry, action: string, model: string | undefined, provider: string | undefined, e: unknown, t0: number, metadata: Record<string, unknown>): void {
    const code = codeOf(e);
    this.o.audit?.record(auditRow(caller, key, new Date(), action, model, provider, code, t0, 0, 0, 0, metadata, code));
  }
}

const USE: Record<Scope, string> = {
  inference: "inference",
  tools: "tool calls",
  "agents:run": "agent runs",
  "agents:dispatch": "agent dispatch",
  memory: "memory",
  owner: "host operations",
};
