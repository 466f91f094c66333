// Agent controller: an agent is Ready when its default model routes (a local Model or a Provider
// model) and every tool its policy names exactly is in the tool catalog:
//   Ready=True  Ready                  "model M; N tools offered (plus clarify)"
//   Ready=False GatewayUnavailable | ModelNotSet | ModelNotFound | ModelNotReady | ToolCatalogUnavailable | ToolNotFound
// Agents are re-reconciled when a Provider or Model changes (spec or a Model's status) and when the catalog changes
// (ToolRegistry.onChange), so the condition follows what the agent depends on.
import type { KindController } from "../types";
import type { Svc } from "../../engines/svc";
import type { Ref } from "../../prisma/resource-store";
import type { ToolRegistry } from "../../engines/tools/types";
import { readiness } from "../../engines/agents/readiness";

/** Dependencies whose changes emit no store event: look again later. */
const POLL = new Set(["ToolCatalogUnavailable", "GatewayUnavailable", "ModelNotReady"]);

export function agentController(svc: Svc, enqueue?: (ref: Ref) => void): KindController<"Agent"> {
  const wakeAll = () => {
    const q = enqueue ?? svc.control?.enqueue;
    if (!q) return;
    for (const o of svc.store.list({ kind: "Agent" })) q({ kind: "Agent", name: o.name });
  };
  // a local Model's own readiness (file found, loads) is status, not desired state
  const modelReady = new Map<string, string>();
  svc.store.on("status", (ref: Ref) => {
    if (ref.kind !== "Model") return;
    const c = svc.store.get("Model", ref.name)?.status.conditions?.find((x) => x.type === "Ready");
    const now = `${c?.status}/${c?.reason}`;
    if (modelReady.get(ref.name) === now) return; // other status fields (load state, ...) changed
    modelReady.set(ref.name, now);
    wakeAll();
  });
  // the catalog may be attached after this controller is built: subscribe on first sight
  let watched: ToolRegistry | undefined;
  const watchTools = () => {
    const tools = svc.engines.tools;
    if (!tools || tools === watched) return;
    watched = tools;
    tools.onChange(wakeAll);
  };
  return {
    kind: "Agent",
    // a Provider or Model change may make an agent's model servable, or not: check every agent again
    watches: ["Provider", "Model"],
    async reconcile(obj) {
      watchTools();
      const r = readiness(svc, obj.spec);
      const extra = r.model ? { model: r.model, ...(r.tools !== undefined ? { tools: r.tools } : {}) } : undefined;
      return { status: r.ready ? "True" : "False", reason: r.reason, message: r.message, extra, ...(POLL.has(r.reason) ? { requeueAfterMs: 5000 } : {}) };
    },
  };
}
