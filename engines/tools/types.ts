// The one internal shape of tools, shared by the MCP engine (which fills the catalog from
// McpServer connections and svc's own built-ins), the exposed-tool routes (/mcp/*, svc mcp) and
// the agent loop (which offers catalog tools to a model and executes the calls it makes).
// Nothing here knows HTTP or MCP wire shapes.
import { SvcError, type ErrorKind } from "../errors";

/** Where a catalog entry comes from. */
export type ToolSource =
  | { kind: "builtin" }
  | { kind: "mcp"; server: string; tool: string };

export interface ToolInfo {
  /** catalog name: `<service>_<tool>` for MCP tools (see engines/mcp), `svc_*` for built-ins */
  name: string;
  description?: string;
  /** JSON Schema of the arguments object */
  inputSchema: Record<string, unknown>;
  source: ToolSource;
  /** may external callers (GET /mcp/tools, POST /mcp/call, /mcp, `svc mcp`) see and call it */
  exposable: boolean;
  /** built-ins are protected: no MCP tool can replace them */
  protected: boolean;
  /** MCP tool annotations (readOnlyHint, destructiveHint, …), passed on to external callers so
   * that another MCP client (another svc among them) can apply its own exposure policy */
  annotations?: Record<string, unknown>;
  /** agent capabilities an McpServer tags this tool with (engines/agents/capabilities.ts) */
  capabilities?: string[];
}

export interface ToolContent {
  type: string;
  text?: string;
  [k: string]: unknown;
}

/** What a tool call produced. A tool that reports failure is a result with isError, not a throw. */
export interface ToolCallResult {
  content: ToolContent[];
  isError: boolean;
  structuredContent?: Record<string, unknown>;
}

export interface ToolProgress {
  progress: number;
  total?: number;
  message?: string;
}

export interface ToolCallOptions {
  /** aborts the call (the agent loop's cancellation) */
  signal?: AbortSignal;
  onProgress?: (p: ToolProgress) => void;
  /** the agent making the call (agent loop); tools scoped to an agent (svc_memory_search) need it */
  agent?: string;
  /** W3C traceparent of the call's execute_tool span (tracing on): sent to the MCP server in _meta */
  traceparent?: string;
}

/** Why a call could not be made at all (the spec's tool-service failures). */
export type ToolErrorCode =
  | "tool_not_found" // no such name in the catalog
  | "tool_gone" // the tool disappeared after a catalog refresh (ToolGone)
  | "tool_not_exposable" // external caller named a tool not allowed for external callers
  | "invalid_arguments" // arguments do not match the tool's schema
  | "execution_denied" // the service refused to execute (permissions, policy)
  | "tool_timeout" // tool-call timeout reached without progress
  | "service_unavailable" // the connection is down (ConnectionRefused, AuthRejected, ...)
  | "tool_output_invalid"; // the tool ran, but its answer breaks the tool's own outputSchema

const KIND: Record<ToolErrorCode, ErrorKind> = {
  tool_not_found: "not_found",
  tool_gone: "gone",
  tool_not_exposable: "forbidden",
  invalid_arguments: "invalid",
  execution_denied: "forbidden",
  tool_timeout: "timeout",
  service_unavailable: "unavailable",
  tool_output_invalid: "upstream",
};

/** A tool call that could not be made: an SvcError with a tool code. `path` is the JSON pointer
 * of the offending argument, for invalid_arguments (it becomes the error's param). */
export function toolError(code: ToolErrorCode, message: string, path?: string): SvcError & { code: ToolErrorCode } {
  const param = path ?? (code === "invalid_arguments" ? "/arguments" : code === "tool_not_found" || code === "tool_gone" || code === "tool_not_exposable" ? "name" : null);
  return new SvcError(KIND[code], code, message, param) as SvcError & { code: ToolErrorCode };
}

/** Is `e` a tool call that could not be made (an SvcError with a tool code)? */
export function isToolError(e: unknown): e is SvcError & { code: ToolErrorCode } {
  return e instanceof SvcError && Object.hasOwn(KIND, e.code);
}

/** The catalog every tool user reads: MCP services' tools plus svc's built-ins. */
export interface ToolRegistry {
  /** every enabled tool, built-ins first */
  list(): ToolInfo[];
  get(name: string): ToolInfo | undefined;
  /** Validate the arguments against the tool's schema and run it. Throws a tool error (toolError) when the
   * call cannot be made; a tool's own failure is a result with isError: true. */
  call(name: string, args: Record<string, unknown>, opts?: ToolCallOptions): Promise<ToolCallResult>;
  /** Like get, but connects a service that connects on first use (autoConnect: false) when the
   * name is in its namespace, and throws the tool error tool_gone / tool_not_found when absent. Lets
   * a caller check exposure before anything runs. (Added with the MCP engine; optional.) */
  resolve?(name: string): Promise<ToolInfo>;
  /** called after any catalog change (refresh, connect, disable, delete); returns an unsubscribe */
  onChange(listener: () => void): () => void;
}
