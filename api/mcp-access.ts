// Who may use the exposed tools, and how tool failures look over HTTP. Every route passes the
// gate (engines/gateway/gate.ts): listing and sessions need key use (the inference pipeline's
// authentication, IP allowlist, role, the `tools` scope, `tools:call` in permissions.actions when
// the key lists actions); each tool call is then described to the gate as action `tools:call` on
// resource `tool:<name>`, so the key's policy statements, rate limits, max_requests and budgets
// apply and the audit entry is written there.
import { SvcError } from "../engines/errors";
import type { HttpContext } from "./http-context";
import type { Svc } from "../engines/svc";
import type { KeyEntry } from "../engines/gateway/keys";
import type { Gate, Verdict } from "../engines/gateway/gate";
import { toolError, type ToolInfo, type ToolRegistry } from "../engines/tools/types";
import { callerFrom, setHeaders } from "./caller";
import { rateHeaders } from "./errors";

export const TOOLS_ACTION = "tools:call";

export function registryOf(svc: Svc): ToolRegistry {
  const r = svc.engines.tools;
  if (!r) throw new SvcError("unavailable", "service_unavailable", "exposed tools are unavailable: the tool engine is not running");
  return r;
}

function gateOf(svc: Svc): Gate {
  const gw = svc.engines.gateway;
  if (!gw) throw new SvcError("unavailable", "service_unavailable", "exposed tools are unavailable: the gateway engine (authentication) is not running");
  return gw.gate;
}

/** The calling key (null: unauthenticated loopback, as for inference). Throws 401/403. */
export function toolCaller(svc: Svc, ctx: HttpContext): KeyEntry | null {
  const key = gateOf(svc).admit(callerFrom(ctx), "tools", "tools.call", TOOLS_ACTION);
  if (key) ctx.state.keyId = key.id;
  return key;
}

/** One tool call at the gate: policy (tools:call on tool:<name>), limits; refusals are thrown in
 * the gateway's error shape, with the x-ratelimit-* state on the response. */
export async function enterToolCall(svc: Svc, ctx: HttpContext, tool: string): Promise<Verdict> {
  const v = await gateOf(svc).enter(callerFrom(ctx), {
    action: TOOLS_ACTION,
    scope: "tools",
    audit: "tools.call",
    resource: `tool:${tool}`,
    metered: true,
    spendMicros: 0, // tools have no price: a budgeted key may call them
    metadata: { tool },
  });
  setHeaders(ctx, rateHeaders(v.rate));
  return v;
}

/** Settle and audit a tool call the gate admitted. */
export function finishToolCall(svc: Svc, v: Verdict, status: string): void {
  svc.engines.gateway?.gate.finish(v, { status });
}

/** The tools external callers may see. */
export function exposedTools(r: ToolRegistry): ToolInfo[] {
  return r.list().filter((t) => t.exposable);
}

/** The tool an external caller named, refused before anything runs when it is not exposable. */
export async function exposedTool(r: ToolRegistry, name: string): Promise<ToolInfo> {
  // a tool in the catalog needs no resolve (its await is a turn of the microtask queue per call)
  const info = r.get(name) ?? (r.resolve ? await r.resolve(name) : undefined);
  if (!info) throw toolError("tool_not_found", `no tool named ${JSON.stringify(name)}`);
  if (!info.exposable) {
    throw toolError("tool_not_exposable", `tool ${name} is not allowed for external callers (exposure policy); it is not retried under another name`);
  }
  return info;
}

/** A tool error as the HTTP routes show it: invalid_arguments is an invalid_request there. */
export function toolHttpError(e: SvcError): SvcError {
  return e.code === "invalid_arguments" ? new SvcError("invalid", "invalid_request", e.message, e.param) : e;
}

/** The audit status of a finished call: success, tool_error (isError result) or the error code. */
export function callStatus(e: unknown, isError?: boolean): string {
  if (e === undefined) return isError ? "tool_error" : "success";
  if (e instanceof SvcError) return e.code;
  return "internal_error";
}
