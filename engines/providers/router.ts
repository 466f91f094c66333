// Routing by model name across Provider objects (spec.models[].name) and local Model objects
// (metadata.name and aliases; provider "local"). The Provider and Model controllers put and
// remove objects (synchronously, inside the store write) and the index is rebuilt before the next
// lookup, so it is never stale; the router never reads the store. Credentials are resolved per request
// (env lookups are live, file contents cached 5 s).
//
// Order of candidates: by default providers sorted by name (stable, predictable). With
// `metadata.routing.strategy: "cost-optimized"` the cheapest first (input + output price per
// million; unpriced last). With `metadata.routing.fallback: true` the next candidate is tried
// when one fails before any byte was streamed (connection error, 5xx, timeout); without it only
// the first candidate is tried.
// Unknown model: 404 model_not_found "model X is not served by this gateway".
//
// A model whose Providers declare `routing` or a per-model `weight` is load-balanced instead
// (balancer.ts): targets() hands the pipeline one virtual "routed" target per request. A Model
// with `spec.router` declares such a group in one place and wins for its names (model-routes.ts).
import type { ProviderSpec } from "../../schemas/kinds/provider";
import type { ModelSpec } from "../../schemas/kinds/model";
import { describeMissing, resolveSecretRef } from "./credentials";
import { SvcError } from "../errors";
import type { Logger } from "../host";
import { withFailureLog } from "./upstream-log";
import type { ProviderAdapter, ProviderType, RouteTarget } from "./types";
import { openaiAdapter } from "./openai";
import { anthropicAdapter } from "./anthropic";
import { localAdapter, type LocalPool } from "./local";
import { azureOpenAIAdapter } from "./azure-openai";
import { bedrockAdapter, bedrockDefaultBaseUrl } from "./bedrock";
import { GEMINI_DEFAULT_BASE_URL, geminiAdapter } from "./gemini";
import { vertexAdapter, vertexDefaultBaseUrl } from "./vertex";
import { missingDeployments, modelRouteGroups, type ModelRouteDecl } from "./model-routes";
import {
  COOLDOWN_DEFAULTS,
  ROUTING_DEFAULTS,
  DeploymentState,
  groupStats,
  pick,
  allCooling,
  routedChat,
  type BalancerHooks,
  type DeploymentStats,
  type Group,
  type GroupSettings,
  type RoutedTarget,
} from "./balancer";

export const DEFAULT_BASE_URL: Record<string, string> = {
  openai: "https://api.openai.com/v1",
  anthropic: "https://api.anthropic.com",
  ollama: "http://127.0.0.1:11434/v1",
  gemini: GEMINI_DEFAULT_BASE_URL,
};

/** A target as indexed: connection settings still as references. */
interface IndexedTarget extends RouteTarget {
  credentialRef?: string;
  headerRefs?: Record<string, string>;
  /** sum of prices, for cost-optimized ordering */
  priceKey: number;
  /** the last resolution (resolve), reused while the references resolve to the same values */
  resolved?: RouteTarget;
}

/** Do the header references still resolve to the values `last` holds? */
function headersUnchanged(refs: Record<string, string> | undefined, last: Record<string, string> | undefined): boolean {
  if (!refs) return true;
  for (const k in refs) if (resolveSecretRef(refs[k]) !== last?.[k]) return false;
  return true;
}

/** How long a call to the Provider may take (its timeoutSeconds; 120 s when unset). */
export const providerTimeoutMs = (spec: { timeoutSeconds?: number }): number => (spec.timeoutSeconds ?? 120) * 1000;

/** Ollama serves its OpenAI-compatible API under /v1: a Provider of type ollama may give
 * Ollama's own address (http://host:11434) or the /v1 one; the path gets /v1 when it lacks it. */
export function upstreamBaseUrl(type: ProviderType, baseUrl: string | undefined, region?: string): string | undefined {
  if (type === "local" || type === "routed") return undefined;
  if (!baseUrl && type === "bedrock") return bedrockDefaultBaseUrl(region);
  if (!baseUrl && type === "vertex") return vertexDefaultBaseUrl(region);
  const base = baseUrl ?? DEFAULT_BASE_URL[type];
  if (base === undefined) return undefined; // azure-openai: the endpoint is the resource's own
  if (type !== "ollama") return base;
  const u = new URL(base);
  const p = u.pathname.replace(/\/+$/, "");
  if (!/\/v1$/.test(p)) u.pathname = `${p}/v1`;
  return u.toString().replace(/\/+$/, "");
}

const toMicros = (x: number | undefined) => (x === undefined ? undefined : Math.round(x * 1e6));

export class ProviderRouter {
  private byModel = new Map<string, IndexedTarget[]>();
  private byCost = new Map<string, IndexedTarget[]>();
  private adapters: Record<ProviderType, ProviderAdapter>;
  private groups = new Map<string, Group>();
  /** routers declared on Model objects (model-routes.ts) */
  private routes: ModelRouteDecl[] = [];
  /** deployment state survives rebuilds: keyed by provider and model */
  private states = new Map<string, DeploymentState>();
  private readonly hooks: BalancerHooks;
  private readonly log: Logger | undefined;
  private readonly logged = new Map<ProviderType, ProviderAdapter>();
  /** Provider and Model objects as their controllers last put them, by name */
  private providers = new Map<string, ProviderSpec>();
  private models = new Map<string, ModelSpec>();
  /** a put or remove since the last rebuild: rebuilt before the next lookup (one rebuild for a
   * whole apply, not one per object) */
  private dirty = false;

  constructor(
    readonly getPool: () => LocalPool | undefined,
    opts: { random?: () => number; now?: () => number; log?: Logger } = {},
  ) {
    const local = localAdapter(getPool);
    this.log = opts.log;
    this.hooks = { adapter: (t) => this.adapters[t.type], resolve: (t) => this.resolve(t), random: opts.random ?? Math.random, now: opts.now ?? Date.now, log: opts.log };
    const routed: ProviderAdapter = {
      chat: (t, req, cancel) => routedChat(t as RoutedTarget, req, cancel, this.hooks),
      // embeddings are not balanced: the first choice serves them
      embed: (t, req, cancel) => {
        const d = (t as RoutedTarget).first.target;
        const a = this.adapters[d.type];
        if (!a.embed) throw new SvcError("invalid", "invalid_request", `model ${JSON.stringify(req.model)} (provider ${d.provider}) does not serve embeddings`, "model");
        return a.embed(this.resolve(d), req, cancel);
      },
    };
    this.adapters = {
      openai: openaiAdapter,
      ollama: openaiAdapter,
      anthropic: anthropicAdapter,
      local,
      "azure-openai": azureOpenAIAdapter,
      bedrock: bedrockAdapter,
      gemini: geminiAdapter,
      vertex: vertexAdapter,
      routed,
    };
    this.rebuild();
  }

  putProvider(name: string, spec: ProviderSpec): void {
    this.providers.set(name, spec);
    this.dirty = true;
  }

  removeProvider(name: string): void {
    if (this.providers.delete(name)) this.dirty = true;
  }

  /** A local Model object (served as provider "local" under its name and aliases). */
  putModel(name: string, spec: Partial<ModelSpec>): void {
    this.models.set(name, spec as ModelSpec);
    this.dirty = true;
  }

  removeModel(name: string): void {
    if (this.models.delete(name)) this.dirty = true;
  }

  private fresh(): void {
    if (this.dirty) this.rebuild();
  }

  /** The adapter of a provider type; with a logger, each failed call is one warn line (a routed
   * target's balancer logs its own attempts, retries and cooldowns). */
  adapter(type: ProviderType): ProviderAdapter {
    const a = this.adapters[type];
    if (!this.log || type === "routed") return a;
    let w = this.logged.get(type);
    if (!w) this.logged.set(type, (w = withFailureLog(a, this.log)));
    return w;
  }

  rebuild() {
    this.dirty = false;
    const m = new Map<string, IndexedTarget[]>();
    const add = (t: IndexedTarget) => {
      const a = m.get(t.model);
      if (a) a.push(t);
      else m.set(t.model, [t]);
    };
    const routing = new Map<string, { spec: ProviderSpec; weighted: Set<string> }>();
    for (const [name, s] of [...this.providers].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const o = { name };
      const isLocal = s.type === "local";
      routing.set(o.name, { spec: s, weighted: new Set((s.models ?? []).filter((pm) => pm.weight !== undefined).map((pm) => pm.name)) });
      for (const pm of s.models ?? []) {
        const inPerM = toMicros(pm.inputPerMillion ?? (isLocal ? 0 : undefined));
        const outPerM = toMicros(pm.outputPerMillion ?? (isLocal ? 0 : undefined));
        const priced = inPerM !== undefined || outPerM !== undefined;
        add({
          provider: o.name,
          type: s.type,
          model: pm.name,
          upstreamModel: pm.upstreamName ?? pm.name,
          inPerM: priced ? (inPerM ?? 0) : undefined,
          outPerM: priced ? (outPerM ?? 0) : undefined,
          priced,
          currency: s.currency,
          baseUrl: upstreamBaseUrl(s.type, s.baseUrl, s.region),
          vendor: vendorOf(s, pm.name, pm.upstreamName ?? pm.name),
          credentialRef: s.credential,
          headerRefs: s.headers,
          timeoutMs: providerTimeoutMs(s),
          priceKey: priced ? (inPerM ?? 0) + (outPerM ?? 0) : Infinity,
          cache: pm.cache,
        });
      }
    }
    const routes: ModelRouteDecl[] = [];
    for (const [objName, s] of this.models) {
      if (s.router) {
        routes.push({ name: objName, names: [objName, ...(s.aliases ?? [])], router: s.router });
        continue;
      }
      for (const name of [objName, ...(s.aliases ?? [])]) {
        add({ provider: "local", type: "local", model: name, upstreamModel: objName, inPerM: 0, outPerM: 0, priced: true, timeoutMs: 600_000, priceKey: 0 });
      }
    }
    const byCost = new Map<string, IndexedTarget[]>();
    for (const [k, a] of m) {
      a.sort((x, y) => (x.provider < y.provider ? -1 : x.provider > y.provider ? 1 : 0));
      byCost.set(k, [...a].sort((x, y) => x.priceKey - y.priceKey));
    }
    this.byModel = m;
    this.byCost = byCost;
    this.groups = this.buildGroups(m, routing, routes);
    this.routes = routes;
  }

  /** Models load-balanced across deployments: those a Provider serving them declares `routing`
   * for, or gives a `weight`. Group settings come from the first Provider by name that sets
   * each; cooldown settings are each deployment's own Provider's. */
  private buildGroups(m: Map<string, IndexedTarget[]>, routing: Map<string, { spec: ProviderSpec; weighted: Set<string> }>, routes: ModelRouteDecl[]): Map<string, Group> {
    const live = new Set<string>();
    // a router declared on a Model wins for its names (model-routes.ts)
    const groups = modelRouteGroups(routes, m, this.states, live);
    for (const [model, a] of m) {
      if (groups.has(model)) continue;
      const decl = a.map((t) => routing.get(t.provider));
      if (!decl.some((r, i) => r && (r.spec.routing || r.weighted.has(a[i].model)))) continue;
      const settings: GroupSettings = { ...ROUTING_DEFAULTS };
      const taken = new Set<keyof GroupSettings>();
      for (const r of decl) {
        const ro = r?.spec.routing;
        for (const k of ["strategy", "maxAttempts", "backoffMs", "maxWaitMs"] as const) {
          if (ro?.[k] === undefined || taken.has(k)) continue;
          (settings as unknown as Record<string, unknown>)[k] = ro[k];
          taken.add(k);
        }
      }
      const deployments = a.map((t, i) => {
        const spec = decl[i]?.spec;
        const pm = spec?.models?.find((x) => x.name === model);
        const cd = { ...COOLDOWN_DEFAULTS, ...(spec?.routing?.cooldown ?? {}) };
        const id = `${t.provider}\0${model}`;
        live.add(id);
        let state = this.states.get(id);
        if (!state) this.states.set(id, (state = new DeploymentState()));
        return { target: t, weight: pm?.weight ?? 1, priceKey: t.priceKey, cooldown: { failures: cd.failures, windowMs: cd.windowSeconds * 1000, ms: cd.seconds * 1000 }, state };
      });
      groups.set(model, { model, deployments, settings });
    }
    for (const id of this.states.keys()) if (!live.has(id)) this.states.delete(id);
    return groups;
  }

  /** The per-request virtual target of a routed model (the pipeline mutates nothing of it; the
   * balancer sets the deployment that served). Throws 503 when every deployment is cooling down
   * for longer than the group waits. */
  private routedTarget(g: Group, costOptimized: boolean): RoutedTarget {
    const strategy = costOptimized ? "cost-optimized" : g.settings.strategy;
    let first = pick(g, strategy, new Set(), this.hooks);
    if (!first) {
      const now = this.hooks.now();
      first = g.deployments.reduce((x, y) => (y.state.coolUntil < x.state.coolUntil ? y : x));
      if (first.state.coolUntil - now > g.settings.maxWaitMs) throw allCooling(g, now);
    }
    let inPerM = 0;
    let outPerM = 0;
    let priced = true;
    let timeoutMs = 0;
    for (const d of g.deployments) {
      inPerM = Math.max(inPerM, d.target.inPerM ?? 0);
      outPerM = Math.max(outPerM, d.target.outPerM ?? 0);
      priced &&= d.target.priced;
      timeoutMs = Math.max(timeoutMs, d.target.timeoutMs);
    }
    const f = first.target;
    return { provider: f.provider, type: "routed", model: g.model, upstreamModel: f.upstreamModel, inPerM: priced ? inPerM : undefined, outPerM: priced ? outPerM : undefined, priced, currency: f.currency, timeoutMs, group: g, first, strategy, cache: f.cache };
  }

  /** Load-balanced deployments and their state (svc status, /metrics). */
  deploymentStats(): DeploymentStats[] {
    this.fresh();
    const now = this.hooks.now();
    // a Model-level group sits under each of its names: once
    return [...new Set(this.groups.values())].flatMap((g) => groupStats(g, now));
  }

  /** What keeps a Model's router from serving all its deployments (its status); [] when fine. */
  modelRouteProblems(model: string): string[] {
    this.fresh();
    const decl = this.routes.find((r) => r.name === model);
    return decl ? missingDeployments(decl, this.byModel) : [];
  }

  /** Indexed targets for a model name (shared arrays: do not mutate). Empty when unknown. */
  targets(model: string, costOptimized = false): readonly RouteTarget[] {
    if (this.dirty) this.rebuild();
    const g = this.groups.get(model);
    if (g) return [this.routedTarget(g, costOptimized)];
    const a = (costOptimized ? this.byCost : this.byModel).get(model);
    if (a) return a;
    const pool = this.getPool();
    if (pool?.has?.(model)) return [{ provider: "local", type: "local", model, upstreamModel: model, inPerM: 0, outPerM: 0, priced: true, timeoutMs: 600_000 }];
    return EMPTY;
  }

  /** The target with its credential and headers resolved, ready to send. References are looked
   * up on every request (an env or file change applies to the next one); the resolved target is
   * rebuilt only when a value changed, not copied per request. */
  resolve(t: RouteTarget): RouteTarget {
    const it = t as IndexedTarget;
    if (!t.baseUrl && t.type === "azure-openai") {
      throw new SvcError("upstream", "upstream_error", `provider ${t.provider} is not usable: an azure-openai Provider needs baseUrl (the resource endpoint, https://NAME.openai.azure.com)`);
    }
    if (!it.credentialRef && !it.headerRefs) return t;
    const credential = resolveSecretRef(it.credentialRef);
    if (it.credentialRef && credential === undefined) {
      throw new SvcError("upstream", "upstream_error", `provider ${t.provider} is not usable: its credential ${it.credentialRef} does not resolve (${describeMissing(it.credentialRef)})`);
    }
    const last = it.resolved;
    if (last && last.credential === credential && headersUnchanged(it.headerRefs, last.headers)) return last;
    let headers: Record<string, string> | undefined;
    if (it.headerRefs) {
      headers = {};
      for (const [k, ref] of Object.entries(it.headerRefs)) {
        const v = resolveSecretRef(ref);
        if (v !== undefined) headers[k] = v;
      }
    }
    const r: RouteTarget = {
      provider: t.provider,
      type: t.type,
      model: t.model,
      upstreamModel: t.upstreamModel,
      inPerM: t.inPerM,
      outPerM: t.outPerM,
      priced: t.priced,
      currency: t.currency,
      baseUrl: t.baseUrl,
      credential,
      headers,
      timeoutMs: t.timeoutMs,
      vendor: t.vendor,
    };
    it.resolved = r;
    return r;
  }

  /** Every model name that can be served now, with its providers (for /v1/models, /api/tags):
   * not through a Provider whose credential or header references do not resolve (its status is
   * CredentialMissing), nor a local Model whose file is missing or that the pool does not hold. */
  listing(): Array<{ model: string; provider: string; type: ProviderType }> {
    this.fresh();
    const out: Array<{ model: string; provider: string; type: ProviderType }> = [];
    const pool = this.getPool();
    const routed = new Set(this.routes.flatMap((r) => (this.groups.has(r.name) ? r.names : [])));
    for (const [model, a] of this.byModel) {
      if (routed.has(model)) continue; // listed below
      for (const t of a) if (this.servable(t, pool)) out.push({ model, provider: t.provider, type: t.type });
    }
    // the names of Model-level routers, through each deployment that can serve
    for (const r of this.routes) {
      const g = this.groups.get(r.name);
      if (!g) continue;
      for (const name of r.names) for (const d of g.deployments) if (this.servable(d.target as IndexedTarget, pool)) out.push({ model: name, provider: d.target.provider, type: d.target.type });
    }
    return out;
  }

  private servable(t: IndexedTarget, pool: LocalPool | undefined): boolean {
    if (t.type === "local") {
      if (!pool) return false;
      return pool.servable ? pool.servable(t.upstreamModel) : (pool.has?.(t.upstreamModel) ?? true);
    }
    if (t.credentialRef && resolveSecretRef(t.credentialRef) === undefined) return false;
    for (const k in t.headerRefs ?? {}) if (resolveSecretRef(t.headerRefs![k]) === undefined) return false;
    return true;
  }

  /** Models a Provider object registered (for its status). */
  modelsOf(provider: string): number {
    this.fresh();
    let n = 0;
    for (const a of this.byModel.values()) for (const t of a) if (t.provider === provider) n++;
    return n;
  }
}

const EMPTY: readonly RouteTarget[] = Object.freeze([]);

const VENDOR_TYPES = new Set(["azure-openai", "bedrock", "gemini", "vertex"]);

/** The vendor settings a target of this Provider model carries (undefined for the other types). */
function vendorOf(s: ProviderSpec, model: string, upstream: string): RouteTarget["vendor"] {
  if (!VENDOR_TYPES.has(s.type)) return undefined;
  return { apiVersion: s.apiVersion, deployment: s.deployments?.[model] ?? upstream, auth: s.auth, region: s.region, project: s.project, tokenUrl: s.tokenUrl };
}
