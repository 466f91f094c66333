// The one enforcement pipeline every inference route goes through (docs/architecture.md "The gate"):
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
import { SvcError, modelNotFound, invalidRequest } from "../errors";
import type { KeyCache, KeyEntry } from "./keys";
import { SCOPE_BIT } from "./scopes";
import type { PolicyAction, PolicyIndex } from "./policy";
import type { AccessAction } from "./access-level";
import type { Admission, Limits } from "./limits";
import type { PipelineAlerts, AlertsSink } from "./pipeline-alerts";
import { auditRow, codeOf, count, reservationWritten, storeUnavailable, withRate, type Tally } from "./pipeline-records";
import type { RateState } from "../errors";
import type { Gate, AuditSink } from "./gate";
import type { ProviderRouter } from "../providers/router";
import { costMicros, type RouteTarget } from "../providers/types";
import { isFallbackable } from "../providers/http";
import { promptTokensOf, promptTokensBound, inputTokens } from "../providers/prompt-tokens";
import { estimateTokens, estimateTextTokens } from "../providers/estimate";
import { keyCurrency } from "./limits/currency";
import { isSyncEvents, type SyncEvents } from "../chat/collect";
import type { Cancellation } from "../chat/cancel";
import type { PipelineMetrics } from "./metrics-sink";

/** Output tokens reserved when the request sets no max_tokens: a typical answer, not the whole
 * context (reserving 4096 refused parallel requests at a few percent of a budget). Settlement
 * uses the actual usage; an answer longer than this bills above its reservation (README bound). */
export const DEFAULT_OUTPUT_RESERVE = 1024;

export type { AlertsSink } from "./pipeline-alerts";
export type { AuditSink } from "./gate";

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

  constructor(
    private readonly o: PipelineOptions,
    readonly gate: Gate,
  ) {
    this.now = o.now ?? Date.now;
    this.alerts = gate.alerts;
  }

  // ------------------------------------------------------------------------------------------
  // authentication and authorization: the gate's (gate.ts)

  /** Who is calling: a key, or null for unauthenticated loopback. Throws 401 (audited, alerted). */
  authenticate(caller: Caller, now = this.now()): KeyEntry | null {
    return this.gate.authenticate(caller, caller.modelCall ?? "chat.completions", now);
  }

  /** authenticate + key use, before the body is read (InferencePipeline.admit); a refused key
   * use is audited as chat() would have. */
  admit(caller: Caller): KeyEntry | null {
    return this.gate.admit(caller, "inference", caller.modelCall ?? "chat.completions");
  }

  /** The scope a model call needs: inference, or the agent grant it is made under (an agent's
   * own model calls are the agent's, not the caller's inference). */
  private checkUse(key: KeyEntry, caller: Caller, access: AccessAction = "inference") {
    this.gate.use(key, caller, caller.grant ?? "inference", undefined, access);
  }

  /** X-Svc-Agent-Id: a key may attribute a request only to an agent its audience allows, and
   * only with the memory scope (the turn goes to that agent's memory) or the agent grant. */
  private attribution(key: KeyEntry, caller: Caller, agent: string) {
    const aud = key.spec.audience;
    if (aud && aud !== "*" && aud !== `agent:${agent}`) {
      throw new SvcError("forbidden", "permission_denied", `this key may not act for agent ${JSON.stringify(agent)} (X-Svc-Agent-Id): its audience is ${JSON.stringify(aud)}`, "X-Svc-Agent-Id");
    }
    if (!caller.grant && (key.scopeBits & SCOPE_BIT.memory) === 0) {
      throw new SvcError("forbidden", "permission_denied", `attributing a request to agent ${JSON.stringify(agent)} (X-Svc-Agent-Id) needs a key with the "memory" scope`, "X-Svc-Agent-Id");
    }
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
    let rate: RateState | undefined;
    try {
      if (key && (!admitted || caller.grant)) this.checkUse(key, caller);
      if (key && req.agentId && key.role === "key") this.attribution(key, caller, req.agentId);
      const routing = req.metadata?.routing as { strategy?: unknown; fallback?: unknown } | undefined;
      const fallback = routing?.fallback === true;
      if (!req.model) throw invalidRequest("model is required", "model");
      let cands = this.o.router.targets(req.model, routing?.strategy === "cost-optimized");
      if (cands.length === 0) throw modelNotFound(req.model);

      let out = req;
      if (key && key.role === "key") {
        cands = this.gate.authorize(key, caller.grant ?? action, req.model, cands, now);
        if (!fallback && cands.length > 1) cands = cands.slice(0, 1);
        const lim = this.o.limits.limitsOf(key);
        // per_request_max judges (or caps) the request in tokens, counted with the serving model's
        // tokenizer (prompt-tokens.ts) unless its byte bound plus max_tokens already fits; a key
        // without it is reserved on the byte estimate alone, so no other request pays for tokenizing
        const est = estimateTokens(req);
        const bound = lim.tokensPerRequest !== undefined && req.maxTokens !== undefined ? promptTokensBound(cands, req) : undefined;
        if (lim.tokensPerRequest !== undefined && !(bound !== undefined && bound + req.maxTokens! <= lim.tokensPerRequest)) {
          const counted = promptTokensOf(cands, req, this.o.router.getPool());
          run.promptEst = typeof counted === "number" ? counted : await counted;
        } else run.promptEst = bound === undefined ? est : Math.min(bound, est);
        let maxTokens = req.maxTokens;
        if (lim.tokensPerRequest !== undefined && maxTokens === undefined && run.promptEst < lim.tokensPerRequest) {
          // cap the output so the request stays within per_request_max
          maxTokens = lim.tokensPerRequest - run.promptEst;
          out = { ...req, maxTokens };
        }
        const reserveOut = maxTokens ?? DEFAULT_OUTPUT_RESERVE;
        // per_request_max judges the true count; the reservation keeps the byte estimate as a floor,
        // so it still covers an upstream that bills more than the tokenizer says (a hidden prompt)
        const held = Math.max(run.promptEst, est);
        let spend = 0;
        for (const t of cands) spend = Math.max(spend, this.keyCost(key, t, costMicros(t, held, reserveOut), req.model, now));
        run.adm = this.o.limits.admit(key, {
          spend,
          currency: keyCurrency(key),
          tokens: held + reserveOut,
          requestTokens: run.promptEst + (req.maxTokens ?? 0),
          promptTokens: held,
          priced: true,
          model: req.model,
        }, now, { requestId: caller.requestId, action: run.action, ip: caller.ip });
        rate = this.o.limits.rate(key, now);
        // shared mode: the shared store's own admission decides before the upstream sees it, and
        // its verdict carries the rate window
        if (run.adm.durable) await run.adm.durable.catch(storeUnavailable);
        if (run.adm.shared) rate = run.adm.shared.rate;
        this.alerts.admitted(key, rate, caller.ip);
      } else {
        if (!fallback && cands.length > 1) cands = cands.slice(0, 1);
        run.promptEst = estimateTokens(req); // no limit to judge: the usage of an answer without any
      }

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
      return { provider: run.target!.provider, model: req.model, rate, events: this.track(events, run) };
    } catch (e) {
      if (run.adm) this.o.limits.settle(run.adm, 0, 0, false);
      this.o.metrics?.refused(e);
      if (key) {
        withRate(e, rate ?? run.adm?.shared?.rate);
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
    const key = run.key;
    const priceCost = costMicros(t, prompt, completion);
    const cost = key && run.adm ? this.keyCost(key, t, priceCost, run.model) : priceCost;
    if (run.adm) {
      this.o.limits.settle(run.adm, cost, prompt + completion, true);
      if (key && cost > 0) this.alerts.spent(key);
    }
    // the audit log's cost_usd and the spend metric are in USD whatever the key's budget currency
    const usd = this.o.limits.usd(priceCost, t.currency);
    this.o.metrics?.completed(run.caller.route, t.provider, run.model, prompt, completion, usd, performance.now() - run.t0);
    if (!key) return;
    const status = failure === undefined ? (usage ? "success" : "cancelled") : codeOf(failure);
    this.o.audit?.record(auditRow(run.caller, key, run.ts, run.action, run.model, t.provider, status, run.t0, prompt, completion, usd, run.metadata));
  }

  /** A price (micro-units of the target's currency) in the key's budget currency
   * (limits/currency.ts). Before admission a missing rate refuses a budgeted key; after it (a
   * rate removed meanwhile) the admission's own conversion stands. */
  private keyCost(key: KeyEntry, t: RouteTarget, micros: number, model: string, now?: number): number {
    if ((t.currency ?? "USD") === keyCurrency(key)) return micros; // the common case: nothing to convert
    const est = { spend: micros, currency: t.currency, tokens: 0, requestTokens: 0, priced: true, model };
    if (now !== undefined) return this.o.limits.inKeyCurrency(key, est, now).est.spend;
    try {
      return this.o.limits.inKeyCurrency(key, est).est.spend;
    } catch {
      return micros;
    }
  }

  private auditFailure(caller: Caller, key: KeyEntry, action: string, model: string | undefined, provider: string | undefined, e: unknown, t0: number, metadata: Record<string, unknown>) {
    this.gate.auditFailure(caller, key, action, model, provider, e, t0, metadata);
  }

  // ------------------------------------------------------------------------------------------
  // embeddings and model listing

  async embed(caller: Caller, req: EmbeddingRequest): Promise<EmbeddingResult & { provider: string; model: string; rate?: RateState }> {
    const t0 = performance.now();
    const now = this.now();
    const admitted = caller.key !== undefined;
    const key = admitted ? (caller.key ?? null) : this.authenticate(caller, now);
    let adm: Admission | undefined;
    let target: RouteTarget | undefined;
    let rate: RateState | undefined;
    let promptEst = 0;
    try {
      if (key && !admitted) this.checkUse(key, caller);
      let cands = this.o.router.targets(req.model);
      if (cands.length === 0) throw modelNotFound(req.model);
      if (key && key.role === "key") {
        cands = this.gate.authorize(key, "embeddings", req.model, cands, now);
        const counted = inputTokens(cands[0], req.input);
        promptEst = typeof counted === "number" ? counted : await counted;
        const held = Math.max(promptEst, req.input.reduce((n, x) => n + estimateTextTokens(x) + 1, 0)); // as for chat
        let spend = 0;
        for (const t of cands) spend = Math.max(spend, this.keyCost(key, t, costMicros(t, held, 0), req.model, now));
        adm = this.o.limits.admit(key, { spend, currency: keyCurrency(key), tokens: held, requestTokens: promptEst, promptTokens: held, priced: true, model: req.model }, now, {
          requestId: caller.requestId,
          action: "embeddings",
          ip: caller.ip,
        });
        rate = this.o.limits.rate(key, now);
        if (adm.durable) await adm.durable.catch(storeUnavailable);
        if (adm.shared) rate = adm.shared.rate;
        this.alerts.admitted(key, rate, caller.ip);
      }
      const written = adm?.written;
      target = cands[0];
      const adapter = this.o.router.adapter(target.type);
      if (!adapter.embed) throw invalidRequest(`model ${JSON.stringify(req.model)} (provider ${target.provider}) does not serve embeddings`, "model");
      const r = await adapter.embed(this.o.router.resolve(target), req);
      if (written) await reservationWritten(written); // written before the answer, as for chat
      const priceCost = costMicros(target, r.promptTokens, 0);
      const cost = key && adm ? this.keyCost(key, target, priceCost, req.model) : priceCost;
      if (adm) this.o.limits.settle(adm, cost, r.promptTokens, true);
      const usd = this.o.limits.usd(priceCost, target.currency);
      this.o.metrics?.completed(caller.route, target.provider, req.model, r.promptTokens, 0, usd, performance.now() - t0);
      if (key) {
        this.o.audit?.record(auditRow(caller, key, new Date(now), "embeddings", req.model, target.provider, "success", t0, r.promptTokens, 0, usd, {}));
      }
      return { ...r, provider: target.provider, model: req.model, rate };
    } catch (e) {
      if (adm) this.o.limits.settle(adm, 0, 0, false);
      this.o.metrics?.refused(e);
      if (key) {
        withRate(e, rate ?? adm?.shared?.rate);
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
          this.gate.authorize(key, "chat:completions", m.model, this.o.router.targets(m.model), now);
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
