// Exposed tools: the convenience routes GET /mcp/health, GET /mcp/tools, POST /mcp/call, and
// svc's own MCP server at /mcp (Streamable HTTP, api/mcp-sessions.ts). All of them serve only
// the tools the exposure policy allows (engines/mcp/exposure.ts), authenticated like inference.
import Router from "@koa/router";
import type { IncomingMessage } from "node:http";
import type { HttpContext } from "../http-context";
import type { InferenceRoute } from "../inference-route";
import { SESSION_COOKIE } from "../console-session";
import type { Svc } from "../../engines/svc";
import { isToolError } from "../../engines/tools/types";
import { SvcError } from "../../engines/errors";
import { readRaw } from "../body";
import { jsonBody } from "../body-schema";
import { ToolCallBody } from "../../schemas/api/bodies";
import type { Verdict } from "../../engines/gateway/gate";
import { callerFrom } from "../caller";
import { callStatus, enterToolCall, exposedTool, exposedTools, finishToolCall, registryOf, toolCaller, toolHttpError } from "../mcp-access";
import type { McpSessions } from "../mcp-sessions";

const MAX_ADMITTED = 4096;
const readToolCall = jsonBody("post", "/mcp/call", ToolCallBody);

/** POST /mcp/call: the gate admits the call (policy, limits) before anything runs. */
async function callTool(svc: Svc, ctx: HttpContext): Promise<void> {
  const reg = registryOf(svc);
  checkOrigin(ctx); // tools may write files: a rebinding page must not reach them on loopback
  toolCaller(svc, ctx);
  const body = await readToolCall(ctx);
  const args = body.arguments ?? {};
  const abort = new AbortController();
  const onClose = () => {
    if (!ctx.res.writableFinished) abort.abort();
  };
  ctx.res.on("close", onClose);
  const v = await enterToolCall(svc, ctx, body.name); // policy, limits: refused before anything runs
  try {
    await exposedTool(reg, body.name);
    const result = await reg.call(body.name, args as Record<string, unknown>, { signal: abort.signal });
    finishToolCall(svc, v, callStatus(undefined, result.isError));
    ctx.body = { ok: !result.isError, tool: body.name, result };
  } catch (e) {
    finishToolCall(svc, v, abort.signal.aborted ? "cancelled" : callStatus(e));
    if (abort.signal.aborted) {
      ctx.respond = false;
      return;
    }
    throw isToolError(e) ? toolHttpError(e) : e;
  } finally {
    ctx.res.off("close", onClose);
  }
}

/** POST /mcp/call and a session's POST /mcp on the lean listener (api/inference-listener.ts): a tool call is a hot path
 * too, and Koa's context graph and middleware cost a large share of a fast tool's round trip.
 * It authenticates for itself (the tools scope, not inference); a console session's request
 * (cookie, no key) goes to the Koa route, where the console's middleware turns the cookie into its key. */
export function mcpInference(svc: Svc): InferenceRoute[] {
  return [
    { path: "/mcp/call", selfAuthenticating: true, viaKoa: consoleCookieOnly, handle: (ctx) => callTool(svc, ctx) },
    // a session's POSTs (its tool calls) too; opening a session, its GET stream and DELETE stay on Koa
    { path: "/mcp", selfAuthenticating: true, viaKoa: (req) => req.method !== "POST" || !req.headers["mcp-session-id"] || consoleCookieOnly(req), handle: (ctx) => endpointOf(svc)(ctx) },
  ];
}

function consoleCookieOnly(req: IncomingMessage): boolean {
  const h = req.headers;
  return !h.authorization && !h["x-api-key"] && (h.cookie ?? "").includes(SESSION_COOKIE);
}

/** The /mcp endpoint of one svc: the Koa route and the lean listener's POST share its sessions. */
const endpoints = new WeakMap<Svc, (ctx: HttpContext) => Promise<void>>();

function endpointOf(svc: Svc): (ctx: HttpContext) => Promise<void> {
  let e = endpoints.get(svc);
  if (!e) endpoints.set(svc, (e = mcpEndpoint(svc)));
  return e;
}

function mcpEndpoint(svc: Svc): (ctx: HttpContext) => Promise<void> {
  let sessions: Promise<McpSessions> | undefined;
  let ready: McpSessions | undefined; // once loaded: no await of the loading promise per request
  // tools/call requests the gate admitted, by session and JSON-RPC id, until the session ran them
  const admitted = new Map<string, Verdict>();
  const callKey = (sid: string | undefined, id: unknown) => `${sid ?? ""}\n${typeof id === "number" ? id : JSON.stringify(id)}`;
  const sessionsOf = () => {
    if (!sessions) {
      const reg = registryOf(svc);
      // the MCP SDK's server loads with the first /mcp session, not with svc
      sessions = import("../mcp-sessions").then(({ McpSessions }) => {
        const s = new McpSessions(reg, (sid, id, _tool, status) => {
          const k = callKey(sid, id);
          const v = admitted.get(k);
          admitted.delete(k);
          if (v) finishToolCall(svc, v, status);
        });
        svc.engines.mcp?.onClose(() => s.close());
        return (ready = s);
      });
    }
    return sessions;
  };

  return async (ctx) => {
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
    // each tools/call in the message passes the gate before the session sees it: a refusal is an
    // HTTP error in the gateway's shape, as on chat, and nothing runs
    const sid = ctx.get("mcp-session-id") || undefined;
    const isCall = (m: any) => m && m.method === "tools/call" && m.id !== undefined;
    const calls = Array.isArray(body) ? body.filter(isCall) : isCall(body) ? [body] : [];
    const entered: string[] = [];
    try {
      for (const m of calls as any[]) {
        const name = typeof m.params?.name === "string" ? m.params.name : "";
        const v = await enterToolCall(svc, ctx, name);
        const k = callKey(sid, m.id);
        admitted.set(k, v);
        entered.push(k);
      }
    } catch (e) {
      for (const k of entered) {
        const v = admitted.get(k)!;
        admitted.delete(k);
        svc.engines.gateway?.gate.failed(v, e);
      }
      throw e;
    }
    ctx.respond = false; // the SDK's transport writes the response
    const outcome = await (ready ?? (await sessionsOf())).handle(ctx.req, ctx.res, key, body);
    // calls no session will run (unknown session, no initialize); handled ones are finished by
    // the session's recorder when they end (their answer may still be streaming now)
    if (outcome !== "handled") {
      for (const k of entered) {
        const v = admitted.get(k);
        if (!v) continue;
        admitted.delete(k);
        finishToolCall(svc, v, "invalid_request");
      }
    } else if (admitted.size > MAX_ADMITTED) {
      // calls the transport refused before its handler ran leave their entry: drop the oldest
      for (const [k, v] of admitted) {
        if (admitted.size <= MAX_ADMITTED / 2) break;
        admitted.delete(k);
        finishToolCall(svc, v, "cancelled");
      }
    }
    if (outcome === "handled") return;
    ctx.respond = true;
    if (outcome === "unknown-session") {
      ctx.status = 404;
      ctx.body = { jsonrpc: "2.0", error: { code: -32001, message: "Session not found: initialize a new session" }, id: null };
    } else {
      ctx.status = 400;
      ctx.body = { jsonrpc: "2.0", error: { code: -32000, message: "Bad Request: no valid session; the first request must be initialize" }, id: null };
    }
  };
}

export default function mcp(svc: Svc): Router {
  const r = new Router();
  r.get("/mcp/health", (ctx) => {
    // a health read: a key that is sent is checked (revoked, IP allowlist) like on every route
    svc.engines.gateway?.gate.identify(callerFrom(ctx), "models:list");
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

  r.post("/mcp/call", (ctx) => callTool(svc, ctx));

  r.all("/mcp", endpointOf(svc));

  return r;
}

/**
 * Cross-origin protection: an Origin, when sent, must be the host svc was reached at (tools may
 * write files). The Host rule against DNS rebinding is the handler's, for every route
 * (api/host-guard.ts).
 */
function checkOrigin(ctx: HttpContext): void {
  const origin = ctx.get("origin");
  if (!origin) return;
  let oh: string;
  try {
    oh = new URL(origin).host;
  } catch {
    oh = "";
  }
  if (oh !== ctx.get("host")) throw new SvcError("forbidden", "permission_denied", `origin ${origin} is not allowed to use /mcp`);
}
