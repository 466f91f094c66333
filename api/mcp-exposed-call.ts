// One tools/call of an exposed tool as svc's MCP server answers it, shared by the SDK's session
// server (api/mcp-sessions.ts) and the JSON answer of plain calls (api/mcp-direct.ts), so both
// give the same results and errors.
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { isToolError, type ToolProgress, type ToolRegistry } from "../engines/tools/types";
import { callStatus, exposedTool } from "./mcp-access";

export interface ExposedCallResult {
  content: unknown[];
  isError: boolean;
  structuredContent?: Record<string, unknown>;
  [k: string]: unknown;
}

/** Run `name`; `record` gets the audit status once the call ended. Naming mistakes are protocol
 * errors (McpError), a failed run is a result with isError, which a model can read and recover from. */
export async function runExposedCall(
  registry: ToolRegistry,
  name: string,
  args: Record<string, unknown>,
  signal: AbortSignal,
  onProgress: ((p: ToolProgress) => void) | undefined,
  record?: (status: string) => void,
): Promise<ExposedCallResult> {
  try {
    await exposedTool(registry, name);
    const r = await registry.call(name, args, { signal, onProgress });
    record?.(callStatus(undefined, r.isError));
    return { content: r.content, isError: r.isError, ...(r.structuredContent ? { structuredContent: r.structuredContent } : {}) };
  } catch (e) {
    record?.(signal.aborted ? "cancelled" : callStatus(e));
    if (!isToolError(e)) throw e;
    if (e.code === "tool_not_found" || e.code === "tool_gone" || e.code === "tool_not_exposable" || e.code === "invalid_arguments") {
      throw new McpError(ErrorCode.InvalidParams, `${e.code}: ${e.message}`);
    }
    return { content: [{ type: "text", text: `${e.code}: ${e.message}` }], isError: true };
  }
}
