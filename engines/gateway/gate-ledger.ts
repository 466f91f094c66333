// The gate's ledger (docs/gate.md): what happens to every admitted call, whichever route made it.
// reserve() takes the rate slot and reserves the price (known, or the pipeline's estimate);
// finish() settles the actual cost and tokens, raises the spend alerts, reports a model call to
// the metrics and writes the one audit entry; refused() releases and audits a refusal. Gate
// (gate.ts) adds authentication, key use and policy in front; the chat pipeline (pipeline.ts)
// works out its estimate and targets and then uses these same steps, so no route keeps a copy.
import { performance } from "node:perf_hooks";
import type { Caller } from "./pipeline-types";
import type { AuditRecord } from "./key-types";
import type { KeyCache, KeyEntry } from "./keys";
import type { Scope } from "./scopes";
import type { PolicyIndex } from "./policy";
import type { Admission, Estimate, Limits } from "./limits";
import { PipelineAlerts, type AlertsSink } from "./pipeline-alerts";
import { auditRow, codeOf, storeUnavailable, withRate } from "./pipeline-records";
import type { RateState } from "../errors";
import type { RouteTarget } from "../providers/types";
import type { PipelineMetrics } from "./metrics-sink";
import { keyCurrency } from "./limits/currency";
import type { Span } from "../telemetry";
import { endCallSpan, failCallSpan } from "./trace-spans";

export interface AuditSink {
  record(e: AuditRecord): void;
}

/** What a route asks of the gate: the internal descriptor of one call. */
/** A provider a call could go to (a chat RouteTarget, a media candidate): the gate reads its name. */
export interface Target {
  provider: string;
}

export interface GateCall<T extends Target = RouteTarget> {
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
  targets?: readonly T[];
  /** the price of the call on a target (media units): the gate prices the first target the
   * policy allows and reserves that (spendMicros, unpriced and provider follow from it) */
  priceOf?(t: T): { spendMicros?: number; unpriced?: string };
  metadata?: Record<string, unknown>;
}

/** The gate's answer for an admitted call (refusals are thrown). */
export interface Verdict<T extends Target = RouteTarget> {
  caller: Caller;
  /** null: unauthenticated loopback */
  key: KeyEntry | null;
  call: GateCall<T>;
  adm?: Admission;
  /** the key's rate window after admission (api/ renders it as x-ratelimit-* headers) */
  rate?: RateState;
  /** GateCall.targets that the key's policy allows (all of them without a key or a policy) */
  targets?: readonly T[];
  t0: number;
  ts: Date;
  /** the call's span while tracing is on (engines/telemetry) */
  span?: Span;
}

export interface Outcome {
  /** "success", "cancelled", "tool_error" or an error code */
  status: string;
  /** actual spend in micro-units of the key's budget currency (default: the reservation for a
   * success, 0 otherwise) */
  costMicros?: number;
  /** a model call's usage */
  promptTokens?: number;
  completionTokens?: number;
  /** a model call's price in micro-USD (the audit log's cost_usd and the spend metric) */
  usdMicros?: number;
  provider?: string;
  model?: string;
  metadata?: Record<string, unknown>;
  /** a model call's finish reason (its span's gen_ai.response.finish_reasons) */
  finishReason?: string;
}

export interface GateOptions {
  keys: KeyCache;
  policies: PolicyIndex;
  limits: Limits;
  audit?: AuditSink;
  alerts?: AlertsSink;
  /** request durations, tokens, spend and limit refusals (engines/metrics) */
  metrics?: PipelineMetrics;
  /** Server.allowUnauthenticatedLoopback, read live */
  allowUnauthenticatedLoopback: () => boolean;
  now?: () => number;
}

export class GateLedger {
  readonly now: () => number;
  readonly alerts: PipelineAlerts;

  constructor(readonly o: GateOptions) {
    this.now = o.now ?? Date.now;
    this.alerts = new PipelineAlerts(o.alerts, o.limits);
  }

  /** The limits step: a rate slot and the reservation of `est` for the verdict's key (a LimitRefusal
   * is thrown). In shared mode the promise returned resolves once the shared store admitted it;
   * embedded, nothing is returned, so the hot path awaits nothing. */
  reserve(v: Verdict<Target>, est: Estimate, now: number): Promise<void> | undefined {
    const key = v.key!;
    const adm = (v.adm = this.o.limits.admit(key, est, now, { requestId: v.caller.requestId, action: v.call.audit, ip: v.caller.ip }));
    v.rate = this.o.limits.rate(key, now);
    if (!adm.durable) {
      this.alerts.admitted(key, v.rate, v.caller.ip);
      return undefined;
    }
    return adm.durable.then(() => {
      if (adm.shared) v.rate = adm.shared.rate; // the shared store's verdict carries it
      this.alerts.admitted(key, v.rate, v.caller.ip);
    }, storeUnavailable);
  }

  /** A price (micro-units of the target's currency) in the key's budget currency
   * (limits/currency.ts). Before admission (`now` given) a missing rate refuses a budgeted key;
   * after it (a rate removed meanwhile) the admission's own conversion stands. */
  keyCost(key: KeyEntry, t: RouteTarget, micros: number, model: string, now?: number): number {
    if ((t.currency ?? "USD") === keyCurrency(key)) return micros; // the common case: nothing to convert
    const est = { spend: micros, currency: t.currency, tokens: 0, requestTokens: 0, priced: true, model };
    if (now !== undefined) return this.o.limits.inKeyCurrency(key, est, now).est.spend;
    try {
      return this.o.limits.inKeyCurrency(key, est).est.spend;
    } catch {
      return micros;
    }
  }

  /** Settle the reservation with the actual cost and tokens, raise the spend alerts, report a
   * model call to the metrics and write the call's audit entry: every admitted call ends here. */
  finish(v: Verdict<Target>, o: Outcome): void {
    const ok = o.status === "success" || o.status === "tool_error";
    const cost = o.costMicros ?? (ok ? (v.call.spendMicros ?? 0) : 0);
    const prompt = o.promptTokens ?? 0;
    const completion = o.completionTokens ?? 0;
    if (v.adm && !v.adm.settled) {
      this.o.limits.settle(v.adm, cost, prompt + completion, true);
      if (v.key && cost > 0) this.alerts.spent(v.key);
    }
    if (v.span) endCallSpan(v, o, cost);
    const model = o.model ?? v.call.model;
    const provider = o.provider ?? v.call.provider;
    // a model call: its price in USD goes to the metrics and the audit log (cost may be in the key's budget currency)
    const end = performance.now(); // one read for the metrics' latency and the audit row's
    if (o.usdMicros !== undefined) this.o.metrics?.completed(v.caller.route, provider!, model!, prompt, completion, o.usdMicros, end - v.t0);
    if (!v.key) return;
    const meta = o.metadata ?? v.call.metadata ?? {};
    // a model call's row names its outcome in the status alone (the usage it had is its record)
    const errorCode = ok || o.usdMicros !== undefined ? undefined : o.status;
    this.o.audit?.record(auditRow(v.caller, v.key, v.ts, v.call.audit, model, provider, o.status, v.t0, prompt, completion, o.usdMicros ?? (v.adm ? cost : 0), meta, errorCode, end));
  }

  /** A call that failed after the gate admitted it: released, audited with its code. */
  failed(v: Verdict<Target>, e: unknown, info: Omit<Outcome, "status"> = {}): void {
    if (v.adm && !v.adm.settled) this.o.limits.settle(v.adm, 0, 0, false);
    if (v.span) failCallSpan(v, e);
    this.finish(v, { ...info, status: codeOf(e), costMicros: 0 });
  }

  /** Run `f` as one admitted call: finish on success, failed() on error (Gate.call does both
   * admission and this in one call). */
  async run<T>(v: Verdict<Target>, f: () => Promise<T>, info: Omit<Outcome, "status"> = {}): Promise<T> {
    try {
      const r = await f();
      this.finish(v, { ...info, status: "success" });
      return r;
    } catch (e) {
      this.failed(v, e, info);
      throw e;
    }
  }

  /** A refusal (before or during the call): the reservation released, the refusal counted,
   * audited with its code and alerted; the error carries the key's rate window. */
  refused(v: Verdict<Target>, e: unknown): void {
    if (v.adm) this.o.limits.settle(v.adm, 0, 0, false);
    if (v.span) failCallSpan(v, e);
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
