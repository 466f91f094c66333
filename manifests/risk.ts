// High-risk changes need confirmation (--yes / "confirm": true): deleting managed objects,
// adding or changing an MCP endpoint, granting screen or browser capabilities, enabling
// channel writes.
import type { ChangeAction } from "./types";

const GRANTS: Record<string, string> = {
  screen: "grants the screen capability",
  browser: "grants the browser capability",
  "channel-write": "enables channel writes (channel-write capability)",
};

/** Why this change is high-risk, or undefined. `before` is the stored spec (undefined for create). */
export function riskOf(action: ChangeAction, kind: string, before: any, after: any, beforeOwner?: string): string | undefined {
  if (action === "unchanged") return undefined;
  if (action === "delete") return `deletes ${kind}${beforeOwner ? ` (managed by ${beforeOwner})` : ""}`;
  const reasons: string[] = [];
  if (kind === "McpServer") {
    if (action === "create") {
      reasons.push(`adds an MCP endpoint: ${endpoint(after)}`);
    } else if ((after?.url !== undefined && after.url !== before?.url) || (after?.command !== undefined && after.command !== before?.command)) {
      reasons.push(`changes the MCP endpoint from ${endpoint(before)} to ${endpoint(after)}`);
    } else if (after?.transport === "stdio" && (JSON.stringify(after?.args ?? []) !== JSON.stringify(before?.args ?? []) || (after?.cwd ?? "") !== (before?.cwd ?? ""))) {
      // the arguments choose what a stdio command runs (a script, a folder it may touch)
      reasons.push(`changes what the MCP command ${after.command} runs (args or cwd)`);
    } else if (after?.transport !== undefined && before?.transport !== undefined && after.transport !== before.transport) {
      reasons.push(`changes the MCP transport from ${before.transport} to ${after.transport}`);
    }
  }
  if (kind === "Agent") {
    const had = new Set<string>(Array.isArray(before?.capabilities) ? before.capabilities : []);
    const now: string[] = Array.isArray(after?.capabilities) ? after.capabilities : [];
    for (const c of now) if (!had.has(c) && GRANTS[c]) reasons.push(GRANTS[c]);
  }
  return reasons.length ? reasons.join("; ") : undefined;
}

function endpoint(spec: any): string {
  if (!spec) return "(none)";
  if (typeof spec.url === "string") {
    try {
      const u = new URL(spec.url);
      return `url ${u.origin}${u.pathname}`; // no credentials or query in messages
    } catch {
      return "url (unparsable)";
    }
  }
  if (typeof spec.command === "string") return `command ${spec.command}`;
  return `(no url or command, transport ${spec.transport ?? "?"})`;
}
