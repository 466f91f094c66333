// Agent capabilities (Agent.spec.capabilities), enforced in the tool loop. A tool needs:
//   - svc's own built-ins (svc_time, svc_models): nothing; they only read svc's own state.
//     svc_memory_search is governed by spec.memory (the agent's own memory).
//   - an MCP service's tool with no tags: `tools`;
//   - a tool the McpServer tags (spec.capabilities, tools.<name>.capabilities): every tag, e.g.
//     `screen` for a screenshot tool; `tools` alone does not unlock it.
// The table, with the reasons, is docs/agents-capabilities.md.
import type { AgentSpec } from "../../schemas/kinds/agent";
import type { ToolInfo } from "../tools/types";

/** The capabilities an agent needs to be offered and to call `t`. */
export function requiredCapabilities(t: ToolInfo): string[] {
  if (t.source.kind === "builtin") return [];
  return t.capabilities?.length ? t.capabilities : ["tools"];
}

/** The capabilities `t` needs that the agent lacks ([] when it may call it). */
export function missingCapabilities(spec: Pick<AgentSpec, "capabilities">, t: ToolInfo): string[] {
  const have = new Set<string>(spec.capabilities ?? []);
  return requiredCapabilities(t).filter((c) => !have.has(c));
}

/** Why the agent may not call `t`, for the model and the step log; null when it may. */
export function capabilityRefusal(agent: string, spec: Pick<AgentSpec, "capabilities">, t: ToolInfo): string | null {
  const missing = missingCapabilities(spec, t);
  if (!missing.length) return null;
  const list = missing.map((c) => JSON.stringify(c)).join(" and ");
  return `tool ${t.name} needs the capabilit${missing.length === 1 ? "y" : "ies"} ${list}, which agent ${agent} does not have (Agent.spec.capabilities)`;
}
