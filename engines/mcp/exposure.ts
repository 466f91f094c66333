// Exposure policy: which tools external callers (/mcp/tools, /mcp/call, /mcp, `svc mcp`) may
// see and call. Agents inside svc see every enabled tool; exposure only concerns outside callers.
//
// - App-only tools are never exposed, whatever the manifest says. A tool is app-only when its
//   MCP Apps metadata `_meta.ui.visibility` lists who may call it and "model" is not among them
//   (e.g. ["app"]: only the app's own UI calls it), or when OpenAI Apps metadata marks it
//   `_meta["openai/visibility"]: "private"`.
// - Otherwise `tools.<name>.expose` in the McpServer manifest decides when it is set.
// - Otherwise the service's `exposeDefault`: `readOnly` (the default) exposes only tools that
//   declare `annotations.readOnlyHint: true`. A tool without that annotation counts as
//   write-capable, as the MCP specification's own annotation defaults say (readOnlyHint false,
//   destructiveHint true), so it stays private until the manifest says otherwise.
import type { McpServerSpec, McpToolSettings } from "../../schemas/kinds/mcp-server";

export interface UpstreamTool {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  annotations?: { readOnlyHint?: boolean; destructiveHint?: boolean; [k: string]: unknown };
  _meta?: Record<string, unknown>;
}

export function isAppOnly(t: Pick<UpstreamTool, "_meta">): boolean {
  const meta = t._meta;
  if (!meta || typeof meta !== "object") return false;
  const ui = meta.ui as { visibility?: unknown } | undefined;
  if (ui && Array.isArray(ui.visibility) && !ui.visibility.includes("model")) return true;
  return meta["openai/visibility"] === "private";
}

export function isReadOnly(t: Pick<UpstreamTool, "annotations">): boolean {
  return t.annotations?.readOnlyHint === true;
}

export type ExposeDefault = McpServerSpec["exposeDefault"];

export function exposable(t: UpstreamTool, settings: McpToolSettings | undefined, def: ExposeDefault | undefined): boolean {
  if (isAppOnly(t)) return false;
  if (settings?.expose !== undefined) return settings.expose;
  switch (def ?? "readOnly") {
    case "all":
      return true;
    case "none":
      return false;
    default:
      return isReadOnly(t);
  }
}
