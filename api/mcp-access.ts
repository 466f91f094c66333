// Who may use the exposed tools, and how tool failures look over HTTP. Authentication is the
// inference pipeline's (same loopback rule, same 401s, failed-auth alerts); then the key's IP
// allowlist, its role (the master key only makes temporary keys), and `permissions.actions`: a
// key that lists actions needs `tools:call` (or `*`); a key without an actions list may call.
import type { HttpContext } from "./http-context";
import type { Svc } from "../engines/svc";
import type { KeyEntry } from "../engines/gateway/keys";
import { ipAllowed } from "../engines/gateway/keys";
import { GatewayError } from "../engines/gateway/errors";
import { ToolError, type ToolInfo, type ToolRegistry } from "../engines/tools/types";
import { callerFrom, routeKey } from "./caller";
import { requireScope } from "../engines/gateway/scopes";

export const TOOLS_ACTION = "tools:call";

export function registryOf(svc: Svc): ToolRegistry {
  const r = svc.engines.tools;
  if (!r) throw new GatewayError(503, "service_unavailable", "exposed tools are unavailable: the tool engine is not running");
  return r;
}

/** The calling key (null: unauthenticated loopback, as for inference). Throws 401/403. */
export function toolCaller(svc: Svc, ctx: HttpContext): KeyEntry | null {
  const key = routeKey(svc, ctx, "service_unavailable", "exposed tools are unavailable: the gateway engine (authentication) is not running");
  if (!key) return null;
  const caller = callerFrom(ctx); // kept in ctx.state by routeKey: not built twice
  if (key.ipRanges && !ipAllowed(caller.ip, key.ipRanges)) {
    throw new GatewayError(403, "ip_not_allowed", `address ${caller.ip} is not in this key's IP allowlist`);
  }
  if (key.role === "master") throw new GatewayError(403, "permission_denied", "the master key can only create temporary keys; use an API key to call tools");
  requireScope(key, "tools");
  const actions = key.spec.permissions?.actions;
  if (actions && !actions.some((a) => a === "*" || a === TOOLS_ACTION)) {
    throw new GatewayError(403, "permission_denied", `action ${TOOLS_ACTION} is not in this key's permissions.actions`);
  }
  return key;
}

/** The tools external callers may see. */
export function exposedTools(r: ToolRegistry): ToolInfo[] {
  return r.list().filter((t) => t.exposable);
}

/** The tool an external caller named, refused before anything runs when it is not exposable. */
export async function exposedTool(r: ToolRegistry, name: string): Promise<ToolInfo> {
  const info = r.resolve ? await r.resolve(name) : r.get(name);
  if (!info) throw new ToolError("tool_not_found", `no tool named ${JSON.stringify(name)}`);
  if (!info.exposable) {
    throw new ToolError("tool_not_exposable", `tool ${name} is not allowed for external callers (exposure policy); it is not retried under another name`);
  }
  return info;
}

const STATUS: Record<ToolError["code"], [number, GatewayError["code"]]> = {
  tool_not_found: [404, "tool_not_found"],
  tool_gone: [410, "tool_gone"],
  tool_not_exposable: [403, "tool_not_exposable"],
  invalid_arguments: [400, "invalid_request"],
  execution_denied: [403, "execution_denied"],
  tool_timeout: [504, "tool_timeout"],
  service_unavailable: [503, "service_unavailable"],
};

export function toolHttpError(e: ToolError): GatewayError {
  const [status, code] = STATUS[e.code] ?? [500, "internal_error"];
  return new GatewayError(status, code, e.message, e.path ?? (e.code === "invalid_arguments" ? "/arguments" : code === "tool_not_found" || code === "tool_gone" || code === "tool_not_exposable" ? "name" : null));
}

export interface CallOrigin {
  requestId: string;
  ip: string;
  userAgent?: string;
}

/** One audit entry per tool call made with a key (unauthenticated loopback calls have no log). */
export function auditToolCall(svc: Svc, key: KeyEntry | null, origin: CallOrigin, tool: string, status: string, startedMs: number): void {
  if (!key) return;
  svc.engines.gateway?.audit.record({
    timestamp: new Date(startedMs),
    apiKeyId: key.id,
    apiKeyName: key.name,
    organizationId: key.spec.organization_id,
    requestId: origin.requestId,
    action: "tools.call",
    status,
    latencyMs: Date.now() - startedMs,
    promptTokens: 0,
    completionTokens: 0,
    costMicros: 0n,
    metadata: { tool },
    ipAddress: origin.ip,
    userAgent: origin.userAgent,
  });
}

/** The audit status of a finished call: success, tool_error (isError result) or the error code. */
export function callStatus(e: unknown, isError?: boolean): string {
  if (e === undefined) return isError ? "tool_error" : "success";
  if (e instanceof ToolError) return e.code;
  if (e instanceof GatewayError) return e.code;
  return "internal_error";
}
