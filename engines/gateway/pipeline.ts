// The one enforcement pipeline every inference route goes through (DESIGN.md "Gateway pipeline"):
// authenticate -> IP allowlist -> permissions and policy -> limits (reserve) -> route ->
// forward (streaming passes through) -> settle cost and tokens -> audit entry -> alerts.
// Everything before forwarding is synchronous and in memory; nothing here touches Prisma.
// Audit rows and failure codes: pipeline-records.ts; alerts: pipeline-alerts.ts.
//
// Status codes (see errors.ts for types):
//   401 invalid_api_key (missing or unknown key) / key_revoked / key_expired
//   403 ip_not_allowed; permission_denied (model or action outside permissions, master key used
//       for inference, unpriced model for a budgeted key); policy_denied (a Deny statement, no
//       Allow, or a bound policy that does not exist)
//   404 model_not_found (no Provider or Model serves the name)
//   402 budget_exceeded / quota_exceeded (tokens incl. per_request_max, max_requests)
//   429 rate_limit_exceeded with Retry-After and x-ratelimit-* headers
//   502 upstream_error / 504 upstream_timeout / 429 from the upstream (see providers/http.ts)
import { performance } from "node:perf_hooks";
import type { ChatEvent, ChatRequest, EmbeddingRequest, EmbeddingResult, Usage } from "../chat/types";
import type { Caller, ChatStart, InferencePipeline, ModelListing } from "./pipeline-types";
import type { AuditRecord } from "./key-types";
import { GatewayError, modelNotFound, invalidRequest } from "./errors";
import { AUTH_MESSAGES, SECRET_PREFIX, ipAllowed, tokenPrefix, type KeyCache, type KeyEntry } from "./keys";
import { SCOPE_BIT, scopeDenied } from "./scopes";
import { accessRefusal, type AccessAction } from "./access-level";
import { evaluate, globMatch, type PolicyAction, type PolicyIndex } from "./policy";
import type { Admission, Limits } from "./limits";
import { PipelineAlerts, type AlertsSink } from "./pipeline-alerts";
import { auditRow, codeOf, count, reservationWritten, storeUnavailable, type Tally } from "./pipeline-records";
import type { ProviderRouter } from "../providers/router";
import { costMicros, type RouteTarget } from "../providers/types";
import { isFallbackable } from "../providers/http";
import { estimateTokens, estimateTextTokens } from "../providers/estimate";
import { isSyncEvents, type SyncEvents } from "../chat/collect";
import type { Cancellation } from "../chat/cancel";
import type { PipelineMetrics } from "../metrics/gateway";

/** Output tokens reserved when the request sets no max_tokens: a typical answer, not the whole
 * context (reserving 4096 refused parallel requests at a few percent of a budget). Settlement
 * uses the actual usage; an answer longer than this bills above its reservation (README bound). */
export const DEFAULT_OUTPUT_RESERVE = 1024;

export type { AlertsSink } from "./pipeline-alerts";

export interface AuditSink {
  record(e: AuditRecord): void;
}

export interface PipelineOptions {
  keys: KeyCache;
  policies: PolicyIndex;
  limits: Limits;
  router: ProviderRouter;
  audit?: AuditSink;
  alerts?: AlertsSink;
  /** request durations, tokens, spend and limit refusals (engines/metrics) */
  metrics?: PipelineMetrics;
  /** Server.allowUnauthenticatedLoopback, read live */
  allowUnauthenticatedLoopback: () => boolean;
  now?: () => number;
}

const NO_HEADERS: Record<string, string> = Object.freeze({}) as Record<string, string>;

interface RunCtx {
  caller: Caller;
  key: KeyEntry | null;
  adm?: Admission;
  target?: RouteTarget;
  model: string;
  action: string;
  promptEst: number;
  t0: number;
  metadata: Record<string, unknown>;
  ts: Date;
}

export class GatewayPipeline implements InferencePipeline {
  private readonly now: () => number;
  private readonly started = Math.floor(Date.now() / 1000);

  private readonly alerts: PipelineAlerts;

  constructor(private readonly o: PipelineOptions) {
    this.now = o.now ?? Date.now;
    this.alerts = new PipelineAlerts(o.alerts, o.limits);
  }

  // ------------------------------------------------------------------------------------------
  // authentication and authorization

  /** Who is calling: a key, or null for unauthenticated loopback. Throws 401 (audited, alerted).
   * On unauthenticated loopback a token that is no known key and does not look like an svc key
   * (the "ollama" / "none" / "lm-studio" placeholders SDKs must send) is anonymous; an sk-svc-
   * token is always checked, so a revoked key stays refused on loopback too. */
  authenticate(caller: Caller, now = this.now()): KeyEntry | null {
    const token = caller.token;
    if (!token) {
      if (caller.loopback && this.o.allowUnauthenticatedLoopback()) return null;
      throw new GatewayError(401, "invalid_api_key", "missing API key: send Authorization: Bearer <key> (or x-api-key)");
    }
    const r = this.o.keys.authenticate(token, now);
    if (r.ok) return r.key;
    if (r.code === "invalid_api_key" && caller.loopback && !token.startsWith(SECRET_PREFIX) && this.o.allowUnauthenticatedLoopback()) return null;
    this.o.alerts?.failedAuth(tokenPrefix(token), caller.ip, r.key?.ref);
    const err = new GatewayError(401, r.code, AUTH_MESSAGES[r.code]);
    if (r.key) this.auditFailure(caller, r.key, caller.route.includes("embed") ? "embeddings" : "chat.completions", undefined, undefined, err, performance.now(), {});
    throw err;
  }

  /** authenticate + checkUse, before the body is read (InferencePipeline.admit); a refused key
   * use is audited as chat() would have. */
  admit(caller: Caller): KeyEntry | null {
    const key = this.authenticate(caller);
    if (key) {
      try {
        this.checkUse(key, caller);
      } catch (e) {
        this.auditFailure(caller, key, caller.route.includes("embed") ? "embeddings" : "chat.completions", undefined, undefined, e, performance.now(), {});
        throw e;
      }
    }
    return key;
  }

  /** IP allowlist and role checks that apply to any use of a key for inference. */
  private checkUse(key: KeyEntry, caller: Caller, access: AccessAction = "inference") {
    if (key.ipRanges && !ipAllowed(caller.ip, key.ipRanges)) {
      throw new GatewayError(403, "ip_not_allowed", `address ${caller.ip} is not in this key's IP allowlist`);
    }
    if (key.role === "master") {
      throw new GatewayError(403, "permission_denied", "the master key can only create temporary keys; use an API key for inference");
    }
    if ((key.scopeBits & SCOPE_BIT.inference) === 0) throw scopeDenied("inference");
    const level = accessRefusal(key, access);
    if (level) throw new GatewayError(403, "permission_denied", level);
  }

  /** Permissions and policy; returns the candidates the key may use (never empty). */
  private authorize(key: KeyEntry, action: PolicyAction, model: string, cands: readonly RouteTarget[], now: number): readonly RouteTarget[] {
    const p = key.spec.permissions;
    if (p?.models && !p.models.some((g) => globMatch(g, model))) {
      throw new GatewayError(403, "permission_denied", `model ${JSON.stringify(model)} is not in this key's permissions.models`, "model");
    }
    if (p?.actions && !p.actions.some((a) => a === "*" || a === action)) {
      throw new GatewayError(403, "permission_denied", `action ${action} is not in this key's permissions.actions`);
    }
    const kp = this.o.policies.forKey(key);
    if (kp.missing.length) {
      throw new GatewayError(403, "policy_denied", `access policy ${JSON.stringify(kp.missing[0])} bound to this key does not exist`);
    }
    let out = cands;
    if (kp.statements.length) {
      const monthSpendMicros = this.o.limits.monthSpend(key);
      let denial: string | undefined;
      out = cands.filter((t) => {
        const d = evaluate(kp.statements, { action, model, provider: t.provider, monthSpendMicros, now });
        if (!d.allowed) denial ??= d.message;
        return d.allowed;
      });
      if (out.length === 0) throw new GatewayError(403, "policy_denied", denial!, "model");
    }
    if (this.o.limits.needsPrice(key, now)) {
      const priced = out.filter((t) => t.priced);
      if (priced.length === 0) {
        throw new GatewayError(
          403,
          "permission_denied",
          `model ${JSON.stringify(model)} has no price configured (Provider ${out[0].provider}); keys with a budget may only use priced models`,
          "model",
        );
      }
      out = priced;
    }
    return out;
  }

  // ------------------------------------------------------------------------------------------
  // chat

  async chat(caller: Caller, req: ChatRequest, cancel: Cancellation): Promise<ChatStart> {
    const t0 = performance.now();
    const now = this.now();
    const action: PolicyAction = req.stream ? "chat:stream" : "chat:completions";
    const run: RunCtx = {
      caller,
      key: null,
      model: req.model,
      action: req.stream ? "chat.stream" : "chat.completions",
      promptEst: 0,
      t0,
      // X-Svc-Agent-Id is attribution only: it lands in the audit entry and grants nothing.
      metadata: req.agentId ? { ...req.metadata, agent_id: req.agentId } : (req.metadata ?? {}),
      ts: new Date(now),
    };
    const admitted = caller.key !== undefined; // by admit(), before the body was read
    run.key = admitted ? (caller.key ?? null) : this.authenticate(caller, now);
    const key = run.key;
    let headers = NO_HEADERS;
    try {
      if (key && !admitted) this.checkUse(key, caller);
      const routing = req.metadata?.routing as { strategy?: unknown; fallback?: unknown } | undefined;
      const fallback = routing?.fallback === true;
      if (!req.model) throw invalidRequest("model is required", "model");
      let cands = this.o.router.targets(req.model, routing?.strategy === "cost-optimized");
      if (cands.length === 0) throw modelNotFound(req.model);

      let out = req;
      run.promptEst = estimateTokens(req);
      if (key && key.role === "key") {
        cands = this.authorize(key, action, req.model, cands, now);
        if (!fallback && cands.length > 1) cands = cands.slice(0, 1);
        const lim = this.o.limits.limitsOf(key);
        let maxTokens = req.maxTokens;
        if (lim.tokensPerRequest !== undefined && maxTokens === undefined && run.promptEst < lim.tokensPerRequest) {
          // cap the output so the request stays within per_request_max
          maxTokens = lim.tokensPerRequest - run.promptEst;
          out = { ...req, maxTokens };
        }
        const reserveOut = maxTokens ?? DEFAULT_OUTPUT_RESERVE;
        let spend = 0;
        for (const t of cands) spend = Math.max(spend, costMicros(t, run.promptEst, reserveOut));
        run.adm = this.o.limits.admit(key, {
          spend,
          tokens: run.promptEst + reserveOut,
          requestTokens: run.promptEst + (req.maxTokens ?? 0),
          promptTokens: run.promptEst,
          priced: true,
          model: req.model,
        }, now, { requestId: caller.requestId, action: run.action, ip: caller.ip });
        // shared limits (scale-out): the headers come with the store's verdict, filled in before `durable` settles
        headers = run.adm.shared?.headers ?? this.o.limits.rateHeaders(key, now);
        // shared mode: the shared store's own admission decides before the upstream sees it
        if (run.adm.durable) await run.adm.durable.catch(storeUnavailable);
        this.alerts.admitted(key, headers, caller.ip);
      } else if (!fallback && cands.length > 1) cands = cands.slice(0, 1);

      let events: AsyncIterable<ChatEvent> | undefined;
      let lastErr: unknown;
      for (const t of cands) {
        run.target = t;
        try {
          events = await this.o.router.adapter(t.type).chat(this.o.router.resolve(t), out, cancel);
          break;
        } catch (e) {
          lastErr = e;
          if (cancel.aborted || !isFallbackable(e)) break;
        }
      }
      if (!events) throw lastErr;
      // The reservation is written at the end of this event-loop turn, while the upstream works;
      // no answer leaves before it is (a crash loses at most requests in flight).
      if (run.adm?.written) await reservationWritten(run.adm.written, events);
      return { provider: run.target!.provider, model: req.model, headers, events: this.track(events, run) };
    } catch (e) {
      if (run.adm) this.o.limits.settle(run.adm, 0, 0, false);
      this.o.metrics?.refused(e);
      if (key) {
        if (e instanceof GatewayError && headers !== NO_HEADERS) {
          for (const [k, v] of Object.entries(headers)) if (!(k in e.headers)) (e.headers as Record<string, string>)[k] = v;
        }
        this.auditFailure(caller, key, run.action, run.model, run.target?.provider, e, t0, run.metadata);
        this.alerts.refused(key, e);
      }
      throw e;
    }
  }

  /** Pass events through; at the end (or on error / early exit) settle and audit. Events known
   * up front (a non-streaming answer) keep their synchronous view, tracked the same way. */
  private track(events: AsyncIterable<ChatEvent>, run: RunCtx): AsyncIterable<ChatEvent> {
    if (!isSyncEvents(events)) return this.trackAsync(events, run);
    const tracked: SyncEvents = { sync: this.trackSync(events.sync, run), [Symbol.asyncIterator]: () => this.trackAsync(events, run) };
    return tracked;
  }

  private async *trackAsync(events: AsyncIterable<ChatEvent>, run: RunCtx): AsyncGenerator<ChatEvent> {
    const tally: Tally = { usage: undefined, chars: 0 };
    let failure: unknown;
    try {
      for await (const ev of events) {
        count(tally, ev);
        yield ev;
      }
    } catch (e) {
      failure = e;
      throw e;
    } finally {
      this.finish(run, tally.usage, tally.chars, failure);
    }
  }

  /** trackAsync for a synchronous view (same settle/audit on completion, error or early exit). */
  private *trackSync(events: Iterable<ChatEvent>, run: RunCtx): Generator<ChatEvent> {
    const tally: Tally = { usage: undefined, chars: 0 };
    let failure: unknown;
    try {
      for (const ev of events) {
        count(tally, ev);
        yield ev;
      }
    } catch (e) {
      failure = e;
      throw e;
    } finally {
      this.finish(run, tally.usage, tally.chars, failure);
    }
  }

  private finish(run: RunCtx, usage: Usage | undefined, chars: number, failure: unknown) {
    const prompt = usage?.promptTokens ?? run.promptEst;
    const completion = usage?.completionTokens ?? Math.ceil(chars / 4);
    const t = run.target!;
    const cost = costMicros(t, prompt, completion);
    const key = run.key;
    if (run.adm) {
      this.o.limits.settle(run.adm, cost, prompt + completion, true);
      if (key && cost > 0) this.alerts.spent(key);
    }
    this.o.metrics?.completed(run.caller.route, t.provider, run.model, prompt, completion, cost, performance.now() - run.t0);
    if (!key) return;
    const status = failure === undefined ? (usage ? "success" : "cancelled") : codeOf(failure);
    this.o.audit?.record(auditRow(run.caller, key, run.ts, run.action, run.model, t.provider, status, run.t0, prompt, completion, cost, run.metadata));
  }

  private auditFailure(caller: Caller, key: KeyEntry, action: string, model: string | undefined, provider: string | undefined, e: unknown, t0: number, metadata: Record<string, unknown>) {
    const code = codeOf(e);
    this.o.audit?.record(auditRow(caller, key, new Date(), action, model, provider, code, t0, 0, 0, 0, metadata, code));
  }

  // ------------------------------------------------------------------------------------------
  // embeddings and model listing

  async embed(caller: Caller, req: EmbeddingRequest): Promise<EmbeddingResult & { provider: string; model: string; headers: Record<string, string> }> {
    const t0 = performance.now();
    const now = this.now();
    const admitted = caller.key !== undefined;
    const key = admitted ? (caller.key ?? null) : this.authenticate(caller, now);
    let adm: Admission | undefined;
    let target: RouteTarget | undefined;
    let headers = NO_HEADERS;
    const promptEst = req.input.reduce((n, s) => n + estimateTextTokens(s) + 1, 0);
    try {
      if (key && !admitted) this.checkUse(key, caller);
      let cands = this.o.router.targets(req.model);
      if (cands.length === 0) throw modelNotFound(req.model);
      if (key && key.role === "key") {
        cands = this.authorize(key, "embeddings", req.model, cands, now);
        let spend = 0;
        for (const t of cands) spend = Math.max(spend, costMicros(t, promptEst, 0));
        adm = this.o.limits.admit(key, { spend, tokens: promptEst, requestTokens: promptEst, promptTokens: promptEst, priced: true, model: req.model }, now, {
          requestId: caller.requestId,
          action: "embeddings",
          ip: caller.ip,
        });
        headers = adm.shared?.headers ?? this.o.limits.rateHeaders(key, now);
        if (adm.durable) await adm.durable.catch(storeUnavailable);
        this.alerts.admitted(key, headers, caller.ip);
      }
      const written = adm?.written;
      target = cands[0];
      const adapter = this.o.router.adapter(target.type);
      if (!adapter.embed) throw invalidRequest(`model ${JSON.stringify(req.model)} (provider ${target.provider}) does not serve embeddings`, "model");
      const r = await adapter.embed(this.o.router.resolve(target), req);
      if (written) await reservationWritten(written); // written before the answer, as for chat
      const cost = costMicros(target, r.promptTokens, 0);
      if (adm) this.o.limits.settle(adm, cost, r.promptTokens, true);
      this.o.metrics?.completed(caller.route, target.provider, req.model, r.promptTokens, 0, cost, performance.now() - t0);
      if (key) {
        this.o.audit?.record(auditRow(caller, key, new Date(now), "embeddings", req.model, target.provider, "success", t0, r.promptTokens, 0, cost, {}));
      }
      return { ...r, provider: target.provider, model: req.model, headers };
    } catch (e) {
      if (adm) this.o.limits.settle(adm, 0, 0, false);
      this.o.metrics?.refused(e);
      if (key) {
        if (e instanceof GatewayError && headers !== NO_HEADERS) Object.assign(e.headers, headers);
        this.auditFailure(caller, key, "embeddings", req.model, target?.provider, e, t0, {});
        this.alerts.refused(key, e);
      }
      throw e;
    }
  }

  async listModels(caller: Caller): Promise<ModelListing[]> {
    const now = this.now();
    const key = caller.key !== undefined ? caller.key : this.authenticate(caller, now);
    if (key && caller.key === undefined) this.checkUse(key, caller, "models:list");
    const seen = new Set<string>();
    const out: ModelListing[] = [];
    for (const m of this.o.router.listing()) {
      if (seen.has(m.model)) continue;
      if (key && key.role === "key") {
        try {
          this.authorize(key, "chat:completions", m.model, this.o.router.targets(m.model), now);
        } catch {
          continue;
        }
      }
      seen.add(m.model);
      out.push({ id: m.model, provider: m.provider, providerType: m.type, created: this.started });
    }
    return out;
  }
}
