// Is an agent usable: its model routes (a local Model or a Provider model, through the gateway's
// router) and every tool its policy names exactly is in the catalog. Shared by the Agent
// controller (status) and the run/dispatch routes (refuse plainly instead of failing later).
import type { Host } from "../host";
import type { Gateway } from "../gateway";
import type { ToolRegistry } from "../tools/types";

type ReadinessHost = Host & { engines: { gateway?: Gateway; tools?: ToolRegistry; pool?: { has(name: string): boolean } } };
import type { AgentSpec } from "../../schemas/kinds/agent";
import { missingTools, offeredTools } from "./policy";
import { missingCapabilities } from "./capabilities";

export interface Readiness {
  ready: boolean;
  reason: string;
  message: string;
  model?: string;
  tools?: number;
}

export function readiness(svc: ReadinessHost, spec: AgentSpec, modelOverride?: string): Readiness {
  const gw = svc.engines.gateway;
  if (!gw) return { ready: false, reason: "GatewayUnavailable", message: "the gateway engine is not running, so no model can be called" };
  const model = modelOverride ?? spec.defaultModel;
  if (!model) return { ready: false, reason: "ModelNotSet", message: "spec.defaultModel is not set (or pass model in the run request)" };
  if (gw.router.targets(model).length === 0) {
    return { ready: false, reason: "ModelNotFound", message: `model ${JSON.stringify(model)} is served by no Provider and no local Model`, model };
  }
  // a local Model that reports Ready=False (missing file, cannot load) cannot serve the agent
  const targets = gw.router.targets(model);
  if (targets.every((t) => t.type === "local")) {
    const c = svc.store.get("Model", targets[0].upstreamModel)?.status.conditions?.find((x) => x.type === "Ready");
    if (c?.status === "False") return { ready: false, reason: "ModelNotReady", message: `local model ${JSON.stringify(model)} is not ready: ${c.reason}: ${c.message}`, model };
    // the router knows a Model from its store write on; the pool only once its controller has
    // checked the file: until then a run would fail with "no local model" (the Model's status
    // write wakes the Agent controller again)
    if (!svc.engines.pool?.has(targets[0].upstreamModel)) return { ready: false, reason: "ModelNotReady", message: `local model ${JSON.stringify(model)} is not registered yet (its file has not been checked)`, model };
  }
  const tools = svc.engines.tools;
  const missing = missingTools(spec.toolPolicy, tools);
  if (missing.length) {
    if (!tools) return { ready: false, reason: "ToolCatalogUnavailable", message: `the tool catalog is not running; tools needed: ${missing.join(", ")}`, model };
    return { ready: false, reason: "ToolNotFound", message: `tool${missing.length === 1 ? "" : "s"} not in the catalog: ${missing.join(", ")}`, model };
  }
  const listed = offeredTools(spec.toolPolicy, tools);
  const n = listed.filter((t) => missingCapabilities(spec, t).length === 0).length;
  // tools the policy lists but the capabilities withhold are named, so a missing grant is visible
  const needs = [...new Set(listed.flatMap((t) => missingCapabilities(spec, t)))];
  const withheld = listed.length - n ? `; ${listed.length - n} more withheld for lack of the capabilit${needs.length === 1 ? "y" : "ies"} ${needs.join(", ")} (see docs/agents-capabilities.md)` : "";
  return { ready: true, reason: "Ready", message: `model ${model}; ${n} tool${n === 1 ? "" : "s"} offered (plus clarify)${withheld}`, model, tools: n };
}
