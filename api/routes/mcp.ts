// Exposed tools: the convenience routes GET /mcp/health, GET /mcp/tools, POST /mcp/call, and
// svc's own MCP server at /mcp (Streamable HTTP, api/mcp-sessions.ts). All of them serve only
// the tools the exposure policy allows (engines/mcp/exposure.ts), authenticated like inference.
import Router from "@koa/router";
import type { Context } from "koa";
import type { Svc } from "../../engines/svc";
import { ToolError } from "../../engines/tools/types";
import { GatewayError, invalidRequest } from "../../engines/gateway/errors";
import { readJson, readRaw } from "../body";
import { clientIp } from "../loopback";
import { auditToolCall, callStatus, exposedTool, exposedTools, registryOf, toolCaller, toolHttpError } from "../mcp-access";
import { McpSessions } from "../mcp-sessions";

export default function mcp(svc: Svc): Router {
  const r = new Router();
  let sessions: McpSessions | undefined;
  const sessionsOf = () => {
    if (!sessions) {
      const reg = registryOf(svc);
      const s = (sessions = new McpSessions(reg, (key, origin, tool, status, started) => auditToolCall(svc, key, origin, tool, status, started)));
      svc.engines.mcp?.onClose(() => s.close());
    }
    return sessions;
  };

  r.get("/mcp/health", (ctx) => {
    const reg = svc.engines.tools;
    ctx.body = reg ? { status: "ok", tools: exposedTools(reg).length } : { status: "unavailable", tools: 0 };
    if (!reg) ctx.status = 503;
  });

  r.get("/mcp/tools", (ctx) => {
    const reg = registryOf(svc);
    checkOrigin(ctx);
    toolCaller(svc, ctx);
    ctx.body = { tools: exposedTools(reg).map((t) => ({ name: t.name, description: t.description ?? "", inputSchema: t.inputSchema, ...(t.annotations ? { annotations: t.annotations } : {}) })) };
  });

  r.post("/mcp/call", async (ctx) => {
    const reg = registryOf(svc);
    checkOrigin(ctx); // tools may write files: a rebinding page must not reach them on loopback
    const key = toolCaller(svc, ctx);
    const started = Date.now();
    const body = await readJson<{ name?: unknown; arguments?: unknown }>(ctx);
    if (typeof body.name !== "string" || !body.name) throw invalidRequest("name must be a tool name from GET /mcp/tools", "name");
    const args = body.arguments ?? {};
    if (typeof args !== "object" || args === null || Array.isArray(args)) throw invalidRequest("arguments must be an object", "/arguments");
    const abort = new AbortController();
    const onClose = () => {
      if (!ctx.res.writableFinished) abort.abort();
    };
    ctx.res.on("close", onClose);
    const origin = { requestId: String(ctx.state.requestId ?? ""), ip: clientIp(ctx), userAgent: ctx.get("user-agent") || undefined };
    try {
      await exposedTool(reg, body.name); // refused before anything runs
      const result = await reg.call(body.name, args as Record<string, unknown>, { signal: abort.signal });
      auditToolCall(svc, key, origin, body.name, callStatus(undefined, result.isError), started);
      ctx.body = { ok: !result.isError, tool: body.name, result };
    } catch (e) {
      auditToolCall(svc, key, origin, body.name, abort.signal.aborted ? "cancelled" : callStatus(e), started);
      if (abort.signal.aborted) {
        ctx.respond = false;
        return;
      }
      throw e instanceof ToolError ? toolHttpError(e) : e;
    } finally {
      ctx.res.off("close", onClose);
    }
  });

  r.all("/mcp", async (ctx) => {
    registryOf(svc);
    checkOrigin(ctx);
    const key = toolCaller(svc, ctx);
    let body: unknown;
    if (ctx.method === "POST") {
      const raw = await readRaw(ctx);
      try {
        body = JSON.parse(raw.toString("utf8"));
      } catch (e) {
        ctx.status = 400;
        ctx.body = { jsonrpc: "2.0", error: { code: -32700, message: `Parse error: ${(e as Error).message}` }, id: null };
        return;
      }
    }
    ctx.respond = false; // the SDK's transport writes the response
    const origin = { requestId: String(ctx.state.requestId ?? ""), ip: clientIp(ctx), userAgent: ctx.get("user-agent") || undefined };
    const outcome = await sessionsOf().handle(ctx.req, ctx.res, key, origin, body);
    if (outcome === "handled") return;
    ctx.respond = true;
    if (outcome === "unknown-session") {
      ctx.status = 404;
      ctx.body = { jsonrpc: "2.0", error: { code: -32001, message: "Session not found: initialize a new session" }, id: null };
    } else {
      ctx.status = 400;
      ctx.body = { jsonrpc: "2.0", error: { code: -32000, message: "Bad Request: no valid session; the first request must be initialize" }, id: null };
    }
  });

  return r;
}

/**
 * Cross-origin protection: an Origin, when sent, must be the host svc was reached at (tools may
 * write files). The Host rule against DNS rebinding is the handler's, for every route
 * (api/host-guard.ts).
 */
function checkOrigin(ctx: Context): void {
  const origin = ctx.get("origin");
  if (!origin) return;
  let oh: string;
  try {
    oh = new URL(origin).host;
  } catch {
    oh = "";
  }
  if (oh !== ctx.get("host")) throw new GatewayError(403, "permission_denied", `origin ${origin} is not allowed to use /mcp`);
}
