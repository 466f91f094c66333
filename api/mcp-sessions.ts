// svc's own MCP server at /mcp (Streamable HTTP): any MCP client can list and call the exposed
// tools. Session-based rather than stateless, because a session has a stream on which svc can
// send `notifications/tools/list_changed` when the catalog changes (a stateless server has no
// way to tell a client that its list is stale). A session belongs to the key that opened it
// (another key, or none, gets 404 for it); every HTTP request is authenticated again, so a
// revoked key loses its sessions at once. Sessions idle for 30 minutes are closed, and at most
// MAX_SESSIONS are held (the oldest idle one goes first).
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema, isInitializeRequest, type CallToolRequest } from "@modelcontextprotocol/sdk/types.js";
import type { Svc } from "../engines/svc";
import type { ToolProgress, ToolRegistry } from "../engines/tools/types";
import type { KeyEntry } from "../engines/gateway/keys";
import { exposedTools } from "./mcp-access";
import { runExposedCall } from "./mcp-exposed-call";
import { answerPlainToolCall, plainToolCall, type PlainToolCall } from "./mcp-direct";

/** Records one finished tools/call of a session (the gate settles and audits it: the HTTP
 * request that carried the call was admitted by the gate under this session and JSON-RPC id). */
export type CallRecorder = (sessionId: string | undefined, requestId: string | number, tool: string, status: string) => void;

/** tools/call with only its method checked (see exposedServer) */
const CallToolMethodOnly = CallToolRequestSchema.pick({ method: true }).loose();

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
  // Registered with a schema that checks only the method: the SDK's Protocol parses a request with
  // the handler's schema before the Server's own tools/call check runs, and its zod error became
  // -32603 Internal error for a client's malformed params (a name that is not a string, arguments
  // that are not an object). With this schema the Server's check answers -32602 Invalid params,
  // naming the field; the handler below only sees requests that passed CallToolRequestSchema.
  server.setRequestHandler(CallToolMethodOnly, async (request, extra) => {
    const req = request as unknown as CallToolRequest;
    const name = req.params.name;
    const token = req.params._meta?.progressToken;
    const onProgress =
      token === undefined
        ? undefined
        : (p: ToolProgress) => void extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, ...p } }).catch(() => undefined);
    const r = await runExposedCall(registry, name, (req.params.arguments ?? {}) as Record<string, unknown>, extra.signal, onProgress, record && ((status) => record(extra.requestId, name, status)));
    return r as any;
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
    req: IncomingMessage,
    res: ServerResponse,
    key: KeyEntry | null,
    body: unknown,
  ): Promise<"handled" | "unknown-session" | "not-initialize"> {
    const owner = key ? `key:${key.id}` : "loopback";
    const sid = req.headers["mcp-session-id"];
    if (typeof sid === "string" && sid) {
      const s = this.sessions.get(sid);
      if (!s || s.owner !== owner) return "unknown-session";
      s.lastSeen = Date.now();
      const plain = plainToolCall(req, body);
      if (plain) {
        await this.answerPlain(sid, plain, res);
        return "handled";
      }
      this.cancelPlain(sid, body);
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

  /** Plain tools/call requests running now, by session and JSON-RPC id (notifications/cancelled). */
  private readonly plainCalls = new Map<string, AbortController>();

  private async answerPlain(sid: string, msg: PlainToolCall, res: ServerResponse): Promise<void> {
    const k = `${sid}\n${JSON.stringify(msg.id)}`;
    const abort = new AbortController();
    this.plainCalls.set(k, abort);
    try {
      await answerPlainToolCall(this.registry, msg, sid, res, abort, (status) => this.record?.(sid, msg.id, msg.params.name, status));
    } finally {
      if (this.plainCalls.get(k) === abort) this.plainCalls.delete(k);
    }
  }

  /** A notifications/cancelled for a plain call aborts it (the SDK's server does not know the call). */
  private cancelPlain(sid: string, body: unknown): void {
    if (!this.plainCalls.size) return;
    for (const m of Array.isArray(body) ? body : [body]) {
      const id = (m as any)?.method === "notifications/cancelled" ? (m as any).params?.requestId : undefined;
      if (id !== undefined) this.plainCalls.get(`${sid}\n${JSON.stringify(id)}`)?.abort();
    }
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
