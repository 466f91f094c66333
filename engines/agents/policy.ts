// An agent's tool policy (Agent.spec.toolPolicy) against the tool catalog: which tools the model
// is offered, and what happens when it calls one. Precedence: deny beats ask beats auto, across
// the deny / requireApproval lists and the per-tool `tools` map (names or globs).
import type { AgentSpec, ToolMode } from "../../schemas/kinds/agent";
import type { ToolInfo, ToolRegistry } from "../tools/types";
import { globMatch } from "../gateway/policy";

export type Policy = AgentSpec["toolPolicy"];

const isGlob = (p: string) => p.includes("*");
const anyMatch = (patterns: readonly string[] | undefined, name: string) => !!patterns?.some((p) => globMatch(p, name));

/** The mode of a tool the model called; null when the agent does not offer it at all. */
export function toolMode(policy: Policy | undefined, name: string): ToolMode | null {
  const p = policy ?? { allow: [], deny: [], requireApproval: [] };
  const mapped = Object.entries(p.tools ?? {}).filter(([k]) => globMatch(k, name)).map(([, v]) => v);
  if (anyMatch(p.deny, name) || mapped.includes("deny")) return "deny";
  const listed = anyMatch(p.allow, name) || mapped.length > 0 || anyMatch(p.requireApproval, name);
  if (!listed) return null;
  if (anyMatch(p.requireApproval, name) || mapped.includes("ask")) return "ask";
  return "auto";
}

/** Catalog tools the model is offered: listed (allow, requireApproval or the tools map) and not denied. */
export function offeredTools(policy: Policy | undefined, tools: ToolRegistry | undefined): ToolInfo[] {
  if (!tools) return [];
  return tools.list().filter((t) => {
    const m = toolMode(policy, t.name);
    return m === "auto" || m === "ask";
  });
}

/** Plain (non-glob) names the policy lists that the catalog does not have. */
export function missingTools(policy: Policy | undefined, tools: ToolRegistry | undefined): string[] {
  const names = new Set<string>();
  for (const n of [...(policy?.allow ?? []), ...(policy?.requireApproval ?? [])]) if (!isGlob(n)) names.add(n);
  for (const [n, mode] of Object.entries(policy?.tools ?? {})) if (!isGlob(n) && mode !== "deny") names.add(n);
  return [...names].filter((n) => n !== CLARIFY_TOOL && !tools?.get(n));
}

/** The loop's own tool: ask the person who started the run a question. */
export const CLARIFY_TOOL = "clarify";
