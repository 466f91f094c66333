// The router's load balancing (docs/providers.md "Router"): a model served by several
// deployments (the Providers listing it, each with a weight) is routed through one virtual
// target of type "routed" whose adapter picks a deployment, forwards, and on a 429, a 5xx, a
// timeout or a refused connection before any event tries again (at most maxAttempts tries, the
// first included), waiting backoffMs * 2^n between tries. Failures count per deployment: a 429
// cools it down at once (for its Retry-After, else cooldown.seconds), other failures cool it
// after cooldown.failures within cooldown.windowSeconds; a cooled deployment is skipped until
// its time is up (when every one is cooling, the first to recover is waited for, up to
// maxWaitMs). Nothing is retried once the first event of an answer exists: a stream that
// breaks after that fails to the client as it is (its failure still counts).
// The pipeline sees the virtual target: its provider and prices are those of the deployment
// tried first (policy and reservation, at the highest price of the group), then of the one
// that answered (audit, cost, metrics).
import { performance } from "node:perf_hooks";
import type { Cancellation } from "../chat/cancel";
import type { ChatEvent, ChatRequest } from "../chat/types";
import { isSyncEvents } from "../chat/collect";
import { SvcError, type ErrorKind } from "../errors";
import type { ProviderRouting } from "../../schemas/kinds/provider";
import type { ProviderAdapter, RouteTarget } from "./types";
import type { Logger } from "../host";
import { isAbort, logUpstreamFailure, upstreamFields } from "./upstream-log";
import { traceField, type Span } from "../telemetry";

export type Strategy = NonNullable<ProviderRouting["strategy"]>;

export interface GroupSettings {
  strategy: Strategy;
  maxAttempts: number;
  backoffMs: number;
  maxWaitMs: number;
}

export const ROUTING_DEFAULTS: GroupSettings = { strategy: "weighted", maxAttempts: 3, backoffMs: 100, maxWaitMs: 10_000 };
export const COOLDOWN_DEFAULTS = { failures: 3, windowSeconds: 60, seconds: 30 };
/** weight of the newest latency sample in the moving average */
const EWMA_ALPHA = 0.3;

export class DeploymentState {
  inFlight = 0;
  requests = 0;
  failuresTotal = 0;
  latencyMs?: number;
  coolUntil = 0;
  recent: number[] = [];
}

export interface Deployment {
  target: RouteTarget;
  /** how status and metrics name it when not by its Provider alone (two deployments on one Provider) */
  label?: string;
  weight: number;
  priceKey: number;
  cooldown: { failures: number; windowMs: number; ms: number };
  state: DeploymentState;
}

export interface Group {
  model: string;
  deployments: Deployment[];
  settings: GroupSettings;
}

/** The per-request target the pipeline holds for a routed model. */
export interface RoutedTarget extends RouteTarget {
  group: Group;
  first: Deployment;
  strategy: Strategy;
}

export interface BalancerHooks {
  adapter(t: RouteTarget): ProviderAdapter;
  resolve(t: RouteTarget): RouteTarget;
  random: () => number;
  now: () => number;
  /** warn lines for failed attempts, retries and cooldowns */
  log?: Logger;
}

const cooling = (d: Deployment, now: number) => d.state.coolUntil > now;

/** Weighted draw among `ds` (all weights 0: uniform). */
function draw(ds: Deployment[], random: () => number): Deployment {
  let sum = 0;
  for (const d of ds) sum += d.weight;
  if (sum <= 0) return ds[Math.min(ds.length - 1, Math.floor(random() * ds.length))];
  let r = random() * sum;
  for (const d of ds) {
    if (d.weight <= 0) continue;
    r -= d.weight;
    if (r < 0) return d;
  }
  return ds.filter((d) => d.weight > 0).pop()!;
}

/** Those of `ds` with the least `f`, drawn by weight among ties. */
function least(ds: Deployment[], f: (d: Deployment) => number, random: () => number): Deployment {
  let best = Infinity;
  let ties: Deployment[] = [];
  for (const d of ds) {
    const v = f(d);
    if (v < best) {
      best = v;
      ties = [d];
    } else if (v === best) ties.push(d);
  }
  return draw(ties, random);
}

/** The next deployment to try: not cooling, not yet tried when another is left; undefined when
 * every deployment is cooling down. */
export function pick(g: Group, strategy: Strategy, tried: ReadonlySet<Deployment>, h: Pick<BalancerHooks, "random" | "now">): Deployment | undefined {
  const now = h.now();
  let ds = g.deployments.filter((d) => !cooling(d, now) && !tried.has(d));
  if (ds.length === 0) ds = g.deployments.filter((d) => !cooling(d, now));
  if (ds.length === 0) return undefined;
  // a deployment of weight 0 is a standby under every strategy (docs: "used only when the others
  // are out"), not only under weighted: least-busy, latency (no sample yet) and cost-optimized
  // would otherwise prefer it while weighted deployments are in service
  const weighted = ds.filter((d) => d.weight > 0);
  if (weighted.length) ds = weighted;
  if (ds.length === 1) return ds[0];
  switch (strategy) {
    case "least-busy":
      return least(ds, (d) => d.state.inFlight, h.random);
    case "latency":
      return least(ds, (d) => d.state.latencyMs ?? -1, h.random);
    case "cost-optimized":
      return least(ds, (d) => d.priceKey, h.random);
    default:
      // standbys were left out above while a weighted deployment is in service
      return draw(ds, h.random);
  }
}

/** The deployment that recovers first (all are cooling). */
const soonest = (g: Group) => g.deployments.reduce((a, b) => (b.state.coolUntil < a.state.coolUntil ? b : a));

export function allCooling(g: Group, now: number): SvcError {
  const s = Math.max(1, Math.ceil((soonest(g).state.coolUntil - now) / 1000));
  return new SvcError("unavailable", "model_unavailable", `every deployment of model ${g.model} is cooling down after failures; retry in ${s}s`, null, { retryAfterSeconds: s });
}

const RETRYABLE: ReadonlySet<ErrorKind> = new Set<ErrorKind>(["rate_limited", "upstream", "unavailable", "timeout", "internal"]);

function retryable(e: unknown): boolean {
  // an upstream's 429 and 5xx (and timeouts, unreachable upstreams) are worth another deployment
  if (e instanceof SvcError) return RETRYABLE.has(e.kind);
  const x = e as { status?: unknown; name?: unknown } | undefined;
  if (typeof x?.status === "number") return x.status === 429 || x.status >= 500;
  return !(typeof x?.name === "string" && x.name.includes("Abort"));
}

function retryAfterMs(e: unknown): number | undefined {
  const s = e instanceof SvcError ? e.limit.retryAfterSeconds : undefined;
  return s === undefined ? undefined : Math.max(0, s * 1000);
}

/** Count a failure; cool the deployment down when it has failed enough (a 429: at once).
 * Returns the cooldown started (ms), if this failure started one. */
export function noteFailure(d: Deployment, e: unknown, now: number, log?: Logger, model?: string, requestId?: string, trace?: Span): number | undefined {
  const s = d.state;
  s.failuresTotal++;
  let cooled: number | undefined;
  // an upstream's 429 (kind rate_limited; a raw error's status where one was thrown before mapping)
  if ((e instanceof SvcError && e.kind === "rate_limited") || (e as { status?: number })?.status === 429) {
    const ms = retryAfterMs(e) ?? d.cooldown.ms;
    if (ms > 0 && now + ms > s.coolUntil) cooled = ms;
    if (ms > 0) s.coolUntil = Math.max(s.coolUntil, now + ms);
  } else {
    s.recent = s.recent.filter((t) => t > now - d.cooldown.windowMs);
    s.recent.push(now);
    if (s.recent.length >= d.cooldown.failures) {
      // never shorten a longer cooldown already running (a 429's Retry-After, while requests
      // still in flight on the deployment fail)
      s.coolUntil = Math.max(s.coolUntil, now + d.cooldown.ms);
      s.recent = [];
      cooled = d.cooldown.ms;
    }
  }
  if (cooled !== undefined && log) {
    log.warn("deployment cooling down", { ...upstreamFields(d.target, e, requestId), ...traceField(trace), ...(model ? { routedModel: model } : {}), cooldownSeconds: Math.round(cooled / 100) / 10 });
  }
  return cooled;
}

function sleep(ms: number, cancel: Cancellation): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      cancel.off("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    cancel.once("abort", done);
  });
}

/** The virtual target now stands for `d` (audit, cost and metrics name the deployment that served). */
function adopt(t: RoutedTarget, d: Deployment): void {
  t.provider = d.target.provider;
  t.upstreamModel = d.target.upstreamModel;
  t.inPerM = d.target.inPerM;
  t.outPerM = d.target.outPerM;
  t.priced = d.target.priced;
  // the prices are in the served deployment's currency (cost and spend are converted with it)
  t.currency = d.target.currency;
}

async function* released(events: AsyncIterable<ChatEvent>, d: Deployment, now: () => number, log: Logger | undefined, model: string, cancel: Cancellation): AsyncGenerator<ChatEvent> {
  const requestId = cancel.requestId;
  try {
    yield* events;
  } catch (e) {
    // counted, never retried: part of the answer may be out. A client that left (the request's
    // cancellation aborts the upstream read) is not the deployment's failure: counting it would
    // cool a healthy deployment after a few "stop generating" clicks.
    const left = cancel.aborted || isAbort(e);
    if (!left) noteFailure(d, e, now(), log, model, requestId);
    if (!left) logUpstreamFailure(log, d.target, e, requestId, { routedModel: model }, "upstream stream failed");
    throw e;
  } finally {
    d.state.inFlight--;
  }
}

export async function routedChat(t: RoutedTarget, req: ChatRequest, cancel: Cancellation, h: BalancerHooks): Promise<AsyncIterable<ChatEvent>> {
  const g = t.group;
  const tried = new Set<Deployment>();
  let lastErr: unknown;
  for (let attempt = 1; ; attempt++) {
    // the first choice, unless it started cooling since it was chosen (a concurrent request's 429)
    // while another deployment is free: then choose again rather than wait for it or answer 503
    let d = attempt === 1 && !cooling(t.first, h.now()) ? t.first : pick(g, t.strategy, tried, h);
    if (!d || cooling(d, h.now())) {
      d ??= soonest(g);
      const wait = d.state.coolUntil - h.now();
      if (wait > g.settings.maxWaitMs) throw lastErr ?? allCooling(g, h.now());
      await sleep(wait, cancel);
      if (cancel.aborted) throw lastErr ?? allCooling(g, h.now());
    }
    tried.add(d);
    adopt(t, d);
    const s = d.state;
    s.inFlight++;
    s.requests++;
    const t0 = performance.now();
    let events: AsyncIterable<ChatEvent>;
    try {
      events = await h.adapter(d.target).chat(h.resolve(d.target), req, cancel);
    } catch (e) {
      s.inFlight--;
      if (cancel.aborted) throw e;
      // only the deployment's own failures (429, 5xx, timeouts, unreachable) count toward its
      // cooldown: a request the provider refused as the client's (400) says nothing of its health,
      // and a few of them would otherwise cool it for every client
      if (retryable(e)) noteFailure(d, e, h.now(), h.log, g.model, cancel.requestId, cancel.trace);
      lastErr = e;
      const retry = retryable(e) && attempt < g.settings.maxAttempts;
      // one line per failed attempt, saying what happens next
      logUpstreamFailure(h.log, d.target, e, cancel.requestId, { ...traceField(cancel.trace), routedModel: g.model, attempt, maxAttempts: g.settings.maxAttempts, next: retry ? "retrying on another deployment" : "no attempt left" });
      if (!retry) throw e;
      await sleep(g.settings.backoffMs * 2 ** (attempt - 1), cancel);
      if (cancel.aborted) throw e;
      continue;
    }
    const ms = performance.now() - t0;
    s.latencyMs = s.latencyMs === undefined ? ms : s.latencyMs + EWMA_ALPHA * (ms - s.latencyMs);
    if (isSyncEvents(events)) {
      s.inFlight--; // the whole answer is here
      return events;
    }
    return released(events, d, h.now, h.log, g.model, cancel);
  }
}

/** What `svc status` and /metrics show of a routed model's deployments. */
export interface DeploymentStats {
  model: string;
  provider: string;
  strategy: Strategy;
  weight: number;
  inFlight: number;
  requests: number;
  failures: number;
  latencySeconds: number | null;
  coolingSeconds: number;
}

export function groupStats(g: Group, now: number): DeploymentStats[] {
  return g.deployments.map((d) => ({
    model: g.model,
    provider: d.label ?? d.target.provider,
    strategy: g.settings.strategy,
    weight: d.weight,
    inFlight: d.state.inFlight,
    requests: d.state.requests,
    failures: d.state.failuresTotal,
    latencySeconds: d.state.latencyMs === undefined ? null : d.state.latencyMs / 1000,
    coolingSeconds: Math.max(0, (d.state.coolUntil - now) / 1000),
  }));
}
