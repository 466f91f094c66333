// svc's own MCP server at /mcp (Streamable HTTP): any MCP client can list and call the exposed
// tools. Session-based rather than stateless, because a session has a stream on which svc can
// send `notifications/tools/list_changed` when the catalog changes (a stateless server has no
// way to tell a client that its list is stale). A session belongs to the key that opened it
// (another key, or none, gets 404 for it); every HTTP request is authenticated again, so a
// revoked key loses its sessions at once. Sessions idle for 30 minutes are closed, and at most
// MAX_SESSIONS are held (the oldest idle one goes first).
import { randomUUID } from "node:crypto";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import type { Svc } from "../engines/svc";
import { isToolError, type ToolRegistry } from "../engines/tools/types";
import type { KeyEntry } from "../engines/gateway/keys";
import { callStatus, exposedTool, exposedTools } from "./mcp-access";

/** Records one finished tools/call of a session (the gate settles and audits it: the HTTP
 * request that carried the call was admitted by the gate under this session and JSON-RPC id). */
export type CallRecorder = (sessionId: string | undefined, requestId: string | number, tool: string, status: string) => void;

const IDLE_MS = 30 * 60_000;
const MAX_SESSIONS = 256;

interface Session {
  transport: StreamableHTTPServerTransport;
  server: Server;
  /** the key that opened the session ("loopback": none) */
  owner: string;
  lastSeen: number;
}

/** The MCP server one session talks to: tools/list and tools/call over the exposed set. */
export function exposedServer(registry: ToolRegistry, record?: (requestId: string | number, tool: string, status: string) => void): Server {
  const server = new Server({ name: "svc", version: "0.1.0" }, { capabilities: { tools: { listChanged: true } } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: exposedTools(registry).map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema as any, ...(t.annotations ? { annotations: t.annotations } : {}) })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const name = req.params.name;
    const token = req.params._meta?.progressToken;
    try {
      await exposedTool(registry, name);
      const r = await registry.call(name, (req.params.arguments ?? {}) as Record<string, unknown>, {
        signal: extra.signal,
        onProgress:
          token === undefined
            ? undefined
            : (p) => void extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, ...p } }).catch(() => undefined),
      });
      record?.(extra.requestId, name, callStatus(undefined, r.isError));
      return { content: r.content as any, isError: r.isError, ...(r.structuredContent ? { structuredContent: r.structuredContent } : {}) };
    } catch (e) {
      record?.(extra.requestId, name, extra.signal.aborted ? "cancelled" : callStatus(e));
      if (!isToolError(e)) throw e;
      // Naming mistakes are protocol errors (as for an unknown tool); a failed run is a result
      // with isError, which the model can read and recover from.
      if (e.code === "tool_not_found" || e.code === "tool_gone" || e.code === "tool_not_exposable" || e.code === "invalid_arguments") {
        throw new McpError(ErrorCode.InvalidParams, `${e.code}: ${e.message}`);
      }
      return { content: [{ type: "text", text: `${e.code}: ${e.message}` }], isError: true };
    }
  });
  return server;
}

export class McpSessions {
  private readonly sessions = new Map<string, Session>();
  private readonly unsubscribe: () => void;
  private readonly sweep: NodeJS.Timeout;

  constructor(
    private readonly registry: ToolRegistry,
    private readonly record?: CallRecorder,
  ) {
    this.unsubscribe = registry.onChange(() => {
      for (const s of this.sessions.values()) void s.server.sendToolListChanged().catch(() => undefined);
    });
    this.sweep = setInterval(() => this.expire(Date.now() - IDLE_MS), 60_000);
    this.sweep.unref();
  }

  get size(): number {
    return this.sessions.size;
  }

  /**
   * Serve one HTTP request of the authenticated `key` (null: unauthenticated loopback). Says when
   * the request names a session that does not exist or is another caller's (answer 404), or
   * opens none without being an initialize request (answer 400).
   */
  async handle(
    req: import("node:http").IncomingMessage,
    res: import("node:http").ServerResponse,
    key: KeyEntry | null,
    body: unknown,
  ): Promise<"handled" | "unknown-session" | "not-initialize"> {
    const owner = key ? `key:${key.id}` : "loopback";
    const sid = req.headers["mcp-session-id"];
    if (typeof sid === "string" && sid) {
      const s = this.sessions.get(sid);
      if (!s || s.owner !== owner) return "unknown-session";
      s.lastSeen = Date.now();
      await s.transport.handleRequest(req, res, body);
      return "handled";
    }
    if (req.method !== "POST" || !isInitializeRequest(body)) return "not-initialize";
    if (this.sessions.size >= MAX_SESSIONS) this.evictOldest();
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      keepAliveMs: 25_000,
      onsessioninitialized: (id) => {
        this.sessions.set(id, { transport, server, owner, lastSeen: Date.now() });
      },
      onsessionclosed: (id) => {
        this.sessions.delete(id);
      },
    });
    const server = exposedServer(this.registry, this.record && ((id, tool, status) => this.record!(transport.sessionId, id, tool, status)));
    transport.onclose = () => {
      if (transport.sessionId) this.sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
    return "handled";
  }

  private expire(before: number): void {
    for (const [id, s] of this.sessions) {
      if (s.lastSeen < before) {
        this.sessions.delete(id);
        void s.server.close().catch(() => undefined);
      }
    }
  }

  private evictOldest(): void {
    let oldest: [string, Session] | undefined;
    for (const e of this.sessions) if (!oldest || e[1].lastSeen < oldest[1].lastSeen) oldest = e;
    if (oldest) {
      this.sessions.delete(oldest[0]);
      void oldest[1].server.close().catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    this.unsubscribe();
    clearInterval(this.sweep);
    const all = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.allSettled(all.map((s) => s.server.close()));
  }
}
