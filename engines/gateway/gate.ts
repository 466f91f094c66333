// The gate (docs/architecture.md "The gate", docs/gate.md): every route a key can call goes through it.
//   authenticate -> key use (IP allowlist, role, scope, permissions.actions) -> policy
//   (permissions.models, AccessPolicy statements, price for budgeted keys) -> limits (reserve)
//   -> [the route's call] -> settle -> audit entry -> alerts
// A route describes its call with a GateCall (action, scope, model, provider, resource, price) and
// gets a Verdict back, which it hands to finish() once the call is done. Chat, completions,
// responses, messages, Ollama and embeddings reach it through GatewayPipeline (pipeline.ts), which
// adds the price estimate, routing, fallback and streaming and settles through the same ledger
// (gate-ledger.ts: reserve, finish, refused); media, tools, agents, memory and key management
// call enter() and run() directly.
import { performance } from "node:perf_hooks";
import type { Caller } from "./pipeline-types";
import { SvcError } from "../errors";
import { AUTH_MESSAGES, SECRET_PREFIX, ipAllowed, tokenPrefix, type KeyEntry } from "./keys";
import { SCOPE_BIT, scopeDenied, type Scope } from "./scopes";
import { accessRefusal, managementAccessAction, type AccessAction } from "./access-level";
import { evaluate, globMatch, type KeyPolicy } from "./policy";
import { reservationWritten } from "./pipeline-records";
import type { RouteTarget } from "../providers/types";
import { GateLedger, type GateCall, type Outcome, type Target, type Verdict } from "./gate-ledger";
import { callSpan } from "./trace-spans";

export type { AuditSink, GateCall, GateOptions, Outcome, Target, Verdict } from "./gate-ledger";

export class Gate extends GateLedger {
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
    if (key) this.allowlisted(key, caller);
    const refusal = accessRefusal(key, level);
    if (refusal) throw new SvcError("forbidden", "permission_denied", refusal);
    return key;
  }

  /** IP allowlist, access level, role, scope and permissions.actions: any use of a key for
   * `action`. `access` is what the access level judges (default: from the scope; key
   * management and audit pass theirs, from the call's audit name). */
  use(key: KeyEntry, caller: Caller, scope: Scope | null, action?: string, access?: AccessAction): void {
    this.allowlisted(key, caller);
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

  /** The key's IP allowlist admits the caller's address (403 otherwise): any use of a key. */
  private allowlisted(key: KeyEntry, caller: Caller): void {
    if (key.ipRanges && !ipAllowed(caller.ip, key.ipRanges)) {
      throw new SvcError("forbidden", "ip_not_allowed", `address ${caller.ip} is not in this key's IP allowlist`);
    }
  }

  /** permissions.actions, when the key lists them, must name the action (or "*"). */
  actionAllowed(key: KeyEntry, action: string): void {
    const actions = key.spec.permissions?.actions;
    if (actions && !actions.some((a) => a === "*" || a === action || (a.includes("*") && globMatch(a, action)))) {
      throw new SvcError("forbidden", "permission_denied", `action ${action} is not in this key's permissions.actions`);
    }
  }

  /** authenticate + use, before a body is read; a refused use is audited under `audit`. */
  admit(caller: Caller, scope: Scope | null, audit: string, action?: string, now = this.now()): KeyEntry | null {
    const key = caller.key !== undefined ? caller.key : this.authenticate(caller, audit, now);
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
    let out = this.policyTargets(key, kp.statements, { action, model }, cands, now);
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
  private authorizeCall<T extends Target>(key: KeyEntry, c: GateCall<T>, now: number): void {
    this.modelAllowed(key, c.model);
    this.actionAllowed(key, c.action);
    const kp = this.boundPolicy(key);
    // a call with candidate targets is judged per target's provider (allowedTargets)
    if (kp.statements.length && !c.targets) {
      const d = evaluate(kp.statements, { action: c.action, model: c.model, provider: c.provider, resource: c.resource, monthSpendMicros: this.o.limits.monthSpend(key, now), now });
      if (!d.allowed) throw new SvcError("forbidden", "policy_denied", d.message, c.resource ? null : c.model !== undefined ? "model" : null);
    }
    if (c.metered && c.spendMicros === undefined && this.o.limits.needsPrice(key, now)) {
      throw new SvcError("forbidden", "permission_denied", `${c.unpriced ?? `${c.action} has no price in svc`}; keys with a budget (their own, their team's or their organization's) may only make priced calls`, c.model !== undefined ? "model" : null);
    }
  }

  /** The call's targets whose provider the key's policy statements allow (403 when none is). */
  private allowedTargets<T extends Target>(key: KeyEntry, c: GateCall<T>, now: number): readonly T[] {
    return this.policyTargets(key, this.boundPolicy(key).statements, c, c.targets!, now);
  }

  /** The targets whose provider the statements allow for `q` (chat's and every other call's
   * policy filter); 403 naming the first denial when candidates exist and none is allowed. */
  private policyTargets<T extends Target>(key: KeyEntry, statements: KeyPolicy["statements"], q: { action: string; model?: string; resource?: string }, all: readonly T[], now: number): readonly T[] {
    if (!statements.length) return all;
    const monthSpendMicros = this.o.limits.monthSpend(key, now);
    let denial: string | undefined;
    const out = all.filter((t) => {
      const d = evaluate(statements, { action: q.action, model: q.model, provider: t.provider, resource: q.resource, monthSpendMicros, now });
      if (!d.allowed) denial ??= d.message;
      return d.allowed;
    });
    if (out.length === 0 && all.length > 0) throw new SvcError("forbidden", "policy_denied", denial!, "model");
    return out;
  }

  // ------------------------------------------------------------------------------------------
  // one call: enter (authenticate, use, policy, limits) ... finish (settle, audit, alerts)

  /** One call through the gate, the way every keyed route that is a "call" makes it: admit it
   * (enter), hand the verdict to `work` (the x-ratelimit-* state, the providers the policy allows),
   * then settle and audit it, success or failure (run). `info` adds what the outcome knows. */
  async call<R, T extends Target = RouteTarget>(caller: Caller, c: GateCall<T>, work: (v: Verdict<T>) => Promise<R>, info?: (v: Verdict<T>) => Omit<Outcome, "status">): Promise<R> {
    const v = await this.enter(caller, c);
    return this.run(v, () => work(v), info?.(v));
  }

  /** Admit one call or throw the refusal (audited and alerted like a refused chat). */
  async enter<T extends Target = RouteTarget>(caller: Caller, c: GateCall<T>): Promise<Verdict<T>> {
    const t0 = performance.now();
    const now = this.now();
    const key = caller.key !== undefined ? caller.key : this.authenticate(caller, c.audit, now);
    caller.key = key;
    const v: Verdict<T> = { caller, key, call: c, rate: undefined, targets: c.targets, t0, ts: new Date(now) };
    if (caller.trace) v.span = callSpan(caller.trace, c);
    if (!key) return v;
    try {
      this.use(key, caller, c.scope, undefined, c.scope === null ? managementAccessAction(c.audit) : undefined);
      if (key.role !== "key" || c.scope === null) return v;
      if (c.targets) {
        const allowed = (v.targets = this.allowedTargets(key, c, now));
        // the price/target step: the call goes to the first provider the policy allows, at its price
        if (c.priceOf && allowed.length) Object.assign(c, { provider: allowed[0].provider, spendMicros: undefined, unpriced: undefined }, c.priceOf(allowed[0]));
      }
      this.authorizeCall(key, c, now);
      if (c.metered) {
        const spend = c.spendMicros ?? 0;
        // a call through enter() has a known price (media units, a quote) or none: reserved whole
        const est = { spend, tokens: 0, requestTokens: 0, promptTokens: 0, priced: c.spendMicros !== undefined, known: spend > 0, unbudgeted: c.unbudgeted, model: c.model ?? c.resource ?? c.action };
        const shared = this.reserve(v, est, now);
        if (shared) await shared;
        if (v.adm!.written) await reservationWritten(v.adm!.written);
      }
      return v;
    } catch (e) {
      this.refused(v, e);
      throw e;
    }
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
