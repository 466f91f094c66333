// The router declared on a Model (spec.router, docs/providers.md "The router"): one public model
// name, its deployments across Providers (each a model entry a Provider lists, or a local Model)
// with weights, and the strategy / retry / cooldown settings in one place. It makes the same
// load-balanced group (balancer.ts) as Provider-level routing, and wins over it for its name.
import type { ModelRouter } from "../../schemas/kinds/model";
import { COOLDOWN_DEFAULTS, DeploymentState, ROUTING_DEFAULTS, type Deployment, type Group } from "./balancer";
import type { RouteTarget } from "./types";

export interface ModelRouteDecl {
  /** the Model's name */
  name: string;
  /** its name and aliases: the names clients ask for */
  names: string[];
  router: ModelRouter;
}

type Indexed = RouteTarget & { priceKey: number };

/** The target a deployment names: the Provider's model entry (or the local Model). */
function find<T extends Indexed>(index: ReadonlyMap<string, T[]>, provider: string, model: string): T | undefined {
  return index.get(model)?.find((t) => t.provider === provider);
}

const depModel = (d: ModelRouter["deployments"][number], decl: ModelRouteDecl) => d.model ?? decl.name;

/** What is wrong with a declaration: deployments naming a Provider model (or local Model) that
 * does not exist. Empty when every deployment resolves. */
export function missingDeployments(decl: ModelRouteDecl, index: ReadonlyMap<string, Indexed[]>): string[] {
  return decl.router.deployments
    .filter((d) => !find(index, d.provider, depModel(d, decl)))
    .map((d) => (d.provider === "local" ? `local Model ${depModel(d, decl)} does not exist` : `Provider ${d.provider} does not list model ${depModel(d, decl)}`));
}

/**
 * Groups of the Model-level routers, under each of their names. Deployment state (in flight,
 * latency, cooldown) is kept in `states` across rebuilds; the ids used are added to `live`.
 * A declaration none of whose deployments resolves makes no group (its names are not served).
 */
export function modelRouteGroups<T extends Indexed>(decls: ModelRouteDecl[], index: ReadonlyMap<string, T[]>, states: Map<string, DeploymentState>, live: Set<string>): Map<string, Group> {
  const groups = new Map<string, Group>();
  for (const decl of decls) {
    const r = decl.router;
    const cd = { ...COOLDOWN_DEFAULTS, ...(r.cooldown ?? {}) };
    const seen = new Map<string, number>();
    for (const d of r.deployments) seen.set(d.provider, (seen.get(d.provider) ?? 0) + 1);
    const deployments: Deployment[] = [];
    for (const d of r.deployments) {
      const model = depModel(d, decl);
      const t = find(index, d.provider, model);
      if (!t) continue;
      const id = `model\0${decl.name}\0${d.provider}\0${model}`;
      if (live.has(id)) continue; // the same deployment listed twice
      live.add(id);
      let state = states.get(id);
      if (!state) states.set(id, (state = new DeploymentState()));
      // two deployments on one Provider (e.g. two Azure deployments) are told apart by model
      const label = (seen.get(d.provider) ?? 0) > 1 ? { label: `${d.provider}/${model}` } : {};
      deployments.push({ target: t, ...label, weight: d.weight ?? 1, priceKey: t.priceKey, cooldown: { failures: cd.failures, windowMs: cd.windowSeconds * 1000, ms: cd.seconds * 1000 }, state });
    }
    if (!deployments.length) continue;
    const g: Group = {
      model: decl.name,
      deployments,
      settings: {
        strategy: r.strategy ?? ROUTING_DEFAULTS.strategy,
        maxAttempts: r.maxAttempts ?? ROUTING_DEFAULTS.maxAttempts,
        backoffMs: r.backoffMs ?? ROUTING_DEFAULTS.backoffMs,
        maxWaitMs: r.maxWaitMs ?? ROUTING_DEFAULTS.maxWaitMs,
      },
    };
    for (const n of decl.names) groups.set(n, g);
  }
  return groups;
}
