// Routing by model name across Provider objects (spec.models[].name) and local Model objects
// (metadata.name and aliases; provider "local"). The index is rebuilt from the store on every
// change to a Provider or Model, so it is never stale; credentials are resolved per request
// (env lookups are live, file contents cached 5 s).
//
// Order of candidates: by default providers sorted by name (stable, predictable). With
// `metadata.routing.strategy: "cost-optimized"` the cheapest first (input + output price per
// million; unpriced last). With `metadata.routing.fallback: true` the next candidate is tried
// when one fails before any byte was streamed (connection error, 5xx, timeout); without it only
// the first candidate is tried.
// Unknown model: 404 model_not_found "model X is not served by this gateway".
import type { ResourceStore, Ref } from "../../prisma/resource-store";
import type { ProviderSpec } from "../../schemas/kinds/provider";
import type { ModelSpec } from "../../schemas/kinds/model";
import { describeMissing, resolveSecretRef } from "./credentials";
import { SvcError } from "../errors";
import type { ProviderAdapter, ProviderType, RouteTarget } from "./types";
import { openaiAdapter } from "./openai";
import { anthropicAdapter } from "./anthropic";
import { localAdapter, type LocalPool } from "./local";

export const DEFAULT_BASE_URL: Record<string, string> = {
  openai: "https://api.openai.com/v1",
  anthropic: "https://api.anthropic.com",
  ollama: "http://127.0.0.1:11434/v1",
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

/** Ollama serves its OpenAI-compatible API under /v1: a Provider of type ollama may give
 * Ollama's own address (http://host:11434) or the /v1 one; the path gets /v1 when it lacks it. */
export function upstreamBaseUrl(type: ProviderType, baseUrl: string | undefined): string | undefined {
  if (type === "local") return undefined;
  const base = baseUrl ?? DEFAULT_BASE_URL[type];
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
  private listener = (refs: Ref[]) => {
    if (refs.some((r) => r.kind === "Provider" || r.kind === "Model")) this.rebuild();
  };

  constructor(
    private store: ResourceStore,
    private getPool: () => LocalPool | undefined,
  ) {
    const local = localAdapter(getPool);
    this.adapters = { openai: openaiAdapter, ollama: openaiAdapter, anthropic: anthropicAdapter, local };
    this.rebuild();
    store.on("change", this.listener);
  }

  close() {
    this.store.off("change", this.listener);
  }

  adapter(type: ProviderType): ProviderAdapter {
    return this.adapters[type];
  }

  rebuild() {
    const m = new Map<string, IndexedTarget[]>();
    const add = (t: IndexedTarget) => {
      const a = m.get(t.model);
      if (a) a.push(t);
      else m.set(t.model, [t]);
    };
    for (const o of this.store.list({ kind: "Provider" })) {
      const s = o.spec as ProviderSpec;
      const isLocal = s.type === "local";
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
          baseUrl: upstreamBaseUrl(s.type, s.baseUrl),
          credentialRef: s.credential,
          headerRefs: s.headers,
          timeoutMs: (s.timeoutSeconds ?? 120) * 1000,
          priceKey: priced ? (inPerM ?? 0) + (outPerM ?? 0) : Infinity,
        });
      }
    }
    for (const o of this.store.list({ kind: "Model" })) {
      const s = o.spec as ModelSpec;
      for (const name of [o.name, ...(s.aliases ?? [])]) {
        add({ provider: "local", type: "local", model: name, upstreamModel: o.name, inPerM: 0, outPerM: 0, priced: true, timeoutMs: 600_000, priceKey: 0 });
      }
    }
    const byCost = new Map<string, IndexedTarget[]>();
    for (const [k, a] of m) {
      a.sort((x, y) => (x.provider < y.provider ? -1 : x.provider > y.provider ? 1 : 0));
      byCost.set(k, [...a].sort((x, y) => x.priceKey - y.priceKey));
    }
    this.byModel = m;
    this.byCost = byCost;
  }

  /** Indexed targets for a model name (shared arrays: do not mutate). Empty when unknown. */
  targets(model: string, costOptimized = false): readonly RouteTarget[] {
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
      baseUrl: t.baseUrl,
      credential,
      headers,
      timeoutMs: t.timeoutMs,
    };
    it.resolved = r;
    return r;
  }

  /** Every model name that can be served now, with its providers (for /v1/models, /api/tags):
   * not through a Provider whose credential or header references do not resolve (its status is
   * CredentialMissing), nor a local Model whose file is missing or that the pool does not hold. */
  listing(): Array<{ model: string; provider: string; type: ProviderType }> {
    const out: Array<{ model: string; provider: string; type: ProviderType }> = [];
    const pool = this.getPool();
    for (const [model, a] of this.byModel) {
      for (const t of a) if (this.servable(t, pool)) out.push({ model, provider: t.provider, type: t.type });
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
    let n = 0;
    for (const a of this.byModel.values()) for (const t of a) if (t.provider === provider) n++;
    return n;
  }
}

const EMPTY: readonly RouteTarget[] = Object.freeze([]);
