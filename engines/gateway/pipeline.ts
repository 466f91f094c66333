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
import type { ChatEvent, ChatRequest, EmbeddingRequest, EmbeddingResult } from "../chat/types";
import type { Caller, ChatStart, InferencePipeline, ModelListing } from "./pipeline-types";
import { SvcError, modelNotFound, invalidRequest } from "../errors";
import type { KeyEntry } from "./keys";
import { SCOPE_BIT } from "./scopes";
import type { PolicyAction } from "./policy";
import type { AccessAction } from "./access-level";
import { codeOf, count, reservationWritten, type Tally } from "./pipeline-records";
import type { RateState } from "../errors";
import type { Gate, GateCall, GateOptions, Verdict } from "./gate";
import type { ProviderRouter } from "../providers/router";
import { costMicros, type RouteTarget } from "../providers/types";
import { isFallbackable } from "../providers/http";
import { promptTokensOf, promptTokensBound, inputTokens } from "../providers/prompt-tokens";
import { estimateTokens, estimateTextTokens } from "../providers/estimate";
import { keyCurrency } from "./limits/currency";
import { isWritten } from "./limits/wal";
import { isSyncEvents } from "../chat/collect";
import { Cancellation } from "../chat/cancel";
import { syncEvents } from "../chat/collect";
import type { Probe, ResponseCache } from "../cache";
import { TrackedSync, type SettleRun } from "./pipeline-settle";
import { embedHit, freeHit, hitMetadata, probeChat, probeEmbed } from "./pipeline-cache";
import { attemptSpan, callSpan, chatSpan, outputTally, recordOutput } from "./trace-spans";
import type { Span } from "../telemetry";

/** Output tokens reserved when the request sets no max_tokens: a typical answer, not the whole
 * context (reserving 4096 refused parallel requests at a few percent of a budget). Settlement
 * uses the actual usage; an answer longer than this bills above its reservation (README bound). */
export const DEFAULT_OUTPUT_RESERVE = 1024;

export type { AlertsSink } from "./pipeline-alerts";
export type { AuditSink } from "./gate";

/** The gate's options (keys, policies, limits, audit, alerts, metrics) and the router. */
export interface PipelineOptions extends GateOptions {
  router: ProviderRouter;
  /** the response cache (docs/cache.md), when the gateway runs one */
  cache?: ResponseCache;
}


/** One chat call at the gate: its verdict (gate-ledger.ts), the target that serves it, and the
 * prompt estimate settlement falls back on when the answer reports no usage. */
interface RunCtx extends Verdict {
  call: GateCall & { model: string; metadata: Record<string, unknown> };
  target?: RouteTarget;
  promptEst: number;
  /** answered from the response cache */
  hit?: Probe;
}

/** A fresh tally for a run's answer (the text kept only while its span records content). */
function newTally(run: RunCtx): Tally {
  return { usage: undefined, chars: 0, finish: undefined, text: outputTally(run.span) };
}

export class GatewayPipeline implements InferencePipeline {
  private readonly now: () => number;
  private readonly started = Math.floor(Date.now() / 1000);
  /** finish, bound once: a tracked answer settles through it without a closure a request */
  private readonly settleRun: SettleRun<RunCtx> = (run, tally, failure) => this.finish(run, tally, failure);

  constructor(
    private readonly o: PipelineOptions,
    readonly gate: Gate,
  ) {
    this.now = o.now ?? Date.now;
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
    // the request's one wall-clock read: chat() takes it for the rate windows and the audit time
    const now = (caller.at = this.now());
    return this.gate.admit(caller, "inference", caller.modelCall ?? "chat.completions", undefined, now);
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
    const now = caller.at ?? this.now();
    caller.at = undefined; // one request's clock: a caller object used again reads its own
    const action: PolicyAction = req.stream ? "chat:stream" : "chat:completions";
    const run: RunCtx = {
      caller,
      key: null,
      call: {
        action,
        scope: "inference",
        audit: req.stream ? "chat.stream" : "chat.completions",
        model: req.model,
        // X-Svc-Agent-Id is attribution only: it lands in the audit entry and grants nothing.
        metadata: req.agentId ? { ...req.metadata, agent_id: req.agentId } : (req.metadata ?? {}),
      },
      adm: undefined,
      rate: undefined,
      target: undefined,
      promptEst: 0,
      t0,
      ts: new Date(now),
    };
    const admitted = caller.key !== undefined; // by admit(), before the body was read
    run.key = admitted ? (caller.key ?? null) : this.authenticate(caller, now);
    const key = run.key;
    if (caller.trace) cancel.trace = run.span = chatSpan(caller.trace, caller, req);
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
        for (const t of cands) spend = Math.max(spend, this.gate.keyCost(key, t, costMicros(t, held, reserveOut), req.model, now));
        // the gate's limits step with the estimate; in shared mode the shared store decides before
        // the upstream sees the request, and its verdict carries the rate window
        const shared = this.gate.reserve(run, { spend, currency: keyCurrency(key), tokens: held + reserveOut, requestTokens: run.promptEst + (req.maxTokens ?? 0), promptTokens: held, priced: true, model: req.model }, now);
        if (shared) await shared;
      } else {
        if (!fallback && cands.length > 1) cands = cands.slice(0, 1);
        run.promptEst = estimateTokens(req); // no limit to judge: the usage of an answer without any
      }

      let probe = probeChat(this.o.cache, cands[0], caller, key, req, now);
      if (probe instanceof Promise) probe = await probe;
      if (probe?.entry) return await this.fromCache(run, cands[0], probe);

      let events: AsyncIterable<ChatEvent> | undefined;
      let lastErr: unknown;
      for (const t of cands) {
        run.target = t;
        run.call.provider = t.provider;
        if (run.span) attemptSpan(run.span, t, cands.indexOf(t));
        try {
          events = await this.o.router.adapter(t.type).chat(this.o.router.resolve(t), out, cancel);
          break;
        } catch (e) {
          lastErr = e;
          if (cancel.aborted || !isFallbackable(e)) break;
        }
      }
      if (!events) throw lastErr;
      if (probe) events = this.o.cache!.record(events, probe, this.now);
      // The reservation is written at the end of this event-loop turn, while the upstream works;
      // no answer leaves before it is (a crash loses at most requests in flight).
      if (run.adm?.written && !isWritten(run.adm.written)) await reservationWritten(run.adm.written, events);
      return { provider: run.target!.provider, model: req.model, rate: run.rate, cache: probe?.state, events: this.track(events, run) };
    } catch (e) {
      if (run.target) {
        run.call.provider = run.target.provider; // a balanced target names the deployment it tried last
        // it reached a provider: its time is a request duration too (docs/operations.md), as a
        // failure mid-answer's is; gate.refused only counts limit refusals
        this.o.metrics?.completed(caller.route, run.target.provider, run.call.model, 0, 0, 0, performance.now() - run.t0);
      }
      this.gate.refused(run, e);
      throw e;
    }
  }

  /** A cache hit: no upstream call; settled and audited as the call it answers (docs/cache.md). */
  private async fromCache(run: RunCtx, t: RouteTarget, p: Probe): Promise<ChatStart> {
    run.target = t;
    run.call.provider = t.provider;
    run.hit = p;
    run.call.metadata = hitMetadata(run.call.metadata, p);
    if (run.adm?.written) await reservationWritten(run.adm.written);
    const events = syncEvents(p.entry!.body.kind === "chat" ? p.entry!.body.events : []);
    return { provider: t.provider, model: run.call.model, rate: run.rate, cache: "hit", events: this.track(events, run) };
  }

  /** Pass events through; at the end (or on error / early exit) settle and audit. Events known
   * up front (a non-streaming answer) keep their synchronous view, tracked the same way. */
  private track(events: AsyncIterable<ChatEvent>, run: RunCtx): AsyncIterable<ChatEvent> {
    if (!isSyncEvents(events)) return this.trackAsync(events, run);
    return new TrackedSync(events.sync, events.upstream, run, newTally(run), this.settleRun);
  }

  private async *trackAsync(events: AsyncIterable<ChatEvent>, run: RunCtx): AsyncGenerator<ChatEvent> {
    const tally = newTally(run);
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
      this.finish(run, tally, failure);
    }
  }

  /** The answer ended (complete, failed mid-way, or the client left): settle what was used. */
  private finish(run: RunCtx, { usage, chars, finish, text }: Tally, failure: unknown) {
    if (text) recordOutput(run.span!, text, finish);
    const prompt = usage?.promptTokens ?? run.promptEst;
    const completion = usage?.completionTokens ?? Math.ceil(chars / 4);
    const t = run.target!;
    const priceCost = costMicros(t, prompt, completion);
    const free = freeHit(run.hit);
    if (run.hit) this.o.cache!.saved(run.call.model, this.o.limits.usd(priceCost, t.currency));
    this.gate.finish(run, {
      status: failure === undefined ? (usage ? "success" : "cancelled") : codeOf(failure),
      provider: t.provider, // a balanced target names the deployment that served, once it has
      costMicros: free ? 0 : run.key && run.adm ? this.gate.keyCost(run.key, t, priceCost, run.call.model) : priceCost,
      usdMicros: free ? 0 : this.o.limits.usd(priceCost, t.currency),
      promptTokens: prompt,
      completionTokens: completion,
      finishReason: finish,
    });
  }

  // ------------------------------------------------------------------------------------------
  // embeddings and model listing

  async embed(caller: Caller, req: EmbeddingRequest): Promise<EmbeddingResult & { provider: string; model: string; rate?: RateState; cache?: Probe["state"] }> {
    const now = caller.at ?? this.now();
    caller.at = undefined;
    const admitted = caller.key !== undefined;
    const key = admitted ? (caller.key ?? null) : this.authenticate(caller, now);
    const v: Verdict = { caller, key, call: { action: "embeddings", scope: "inference", audit: "embeddings", model: req.model, metadata: {} }, adm: undefined, rate: undefined, t0: performance.now(), ts: new Date(now) };
    if (caller.trace) v.span = callSpan(caller.trace, v.call);
    try {
      if (key && !admitted) this.checkUse(key, caller);
      let cands = this.o.router.targets(req.model);
      if (cands.length === 0) throw modelNotFound(req.model);
      if (key && key.role === "key") {
        cands = this.gate.authorize(key, "embeddings", req.model, cands, now);
        const counted = inputTokens(cands[0], req.input);
        const promptEst = typeof counted === "number" ? counted : await counted;
        const held = Math.max(promptEst, req.input.reduce((n, x) => n + estimateTextTokens(x) + 1, 0)); // as for chat
        let spend = 0;
        for (const t of cands) spend = Math.max(spend, this.gate.keyCost(key, t, costMicros(t, held, 0), req.model, now));
        const shared = this.gate.reserve(v, { spend, currency: keyCurrency(key), tokens: held, requestTokens: promptEst, promptTokens: held, priced: true, model: req.model }, now);
        if (shared) await shared;
      }
      const written = v.adm?.written;
      const target = cands[0];
      v.call.provider = target.provider;
      let probe = probeEmbed(this.o.cache, target, caller, key, req, now);
      if (probe instanceof Promise) probe = await probe;
      if (probe?.entry?.body.kind === "embed") return await embedHit(this.gate, this.o.limits, this.o.cache!, v, target, probe, probe.entry.body);
      const adapter = this.o.router.adapter(target.type);
      if (!adapter.embed) throw invalidRequest(`model ${JSON.stringify(req.model)} (provider ${target.provider}) does not serve embeddings`, "model");
      const r = await adapter.embed(this.o.router.resolve(target), req, v.span ? tracedCall(v.span, caller) : undefined);
      if (probe) this.o.cache!.save(probe, { kind: "embed", vectors: r.vectors, promptTokens: r.promptTokens }, this.now());
      if (written) await reservationWritten(written); // written before the answer, as for chat
      const priceCost = costMicros(target, r.promptTokens, 0);
      this.gate.finish(v, {
        status: "success",
        costMicros: key && v.adm ? this.gate.keyCost(key, target, priceCost, req.model) : priceCost,
        usdMicros: this.o.limits.usd(priceCost, target.currency),
        promptTokens: r.promptTokens,
        completionTokens: 0,
      });
      return { ...r, provider: target.provider, model: req.model, rate: v.rate, cache: probe?.state };
    } catch (e) {
      this.gate.refused(v, e);
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

/** A traced call's upstream attempt is a child of its span and sends that traceparent (providers/
 * http.ts reads it from the cancellation); embeddings have no client cancellation of their own. */
function tracedCall(span: Span, caller: Caller): Cancellation {
  const c = new Cancellation();
  c.trace = span;
  c.requestId = caller.requestId;
  return c;
}
