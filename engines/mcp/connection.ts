// One upstream tool service: the connection held while the McpServer is enabled. Connect =
// transport + initialize + tools/list under the discovery timeout; a lost or failed connection is
// retried with exponential backoff (1 s doubling to 60 s); `notifications/tools/list_changed`
// refreshes the tool list, and each refresh replaces the whole prior list. The last discovered
// list stays while reconnecting (calls then fail with service_unavailable), so a restart of
// the service does not make agents' catalogs flicker.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ToolListChangedNotificationSchema, McpError, ErrorCode } from "@modelcontextprotocol/sdk/types.js";
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { McpServerSpec } from "../../schemas/kinds/mcp-server";
import type { Logger } from "../host";
import type { SvcError } from "../errors";
import { toolError, type ToolCallOptions, type ToolCallResult, type ToolContent } from "../tools/types";
import type { UpstreamTool } from "./exposure";
import { buildTransport, endpointLabel, type BuiltTransport } from "./transports";
import { failure, type ServiceFailure } from "./failures";
import { classifyConnectError } from "./classify";
import { redactSecrets } from "../secrets/redact";
import { watchOAuthState } from "./oauth-store";
import { leanCallToolResult } from "./lean-messages";
import { STDIO_DEFAULT_MAX_BUFFER_SIZE } from "@modelcontextprotocol/sdk/shared/stdio.js";

export type Phase = "idle" | "connecting" | "ready" | "failed" | "closed";

export interface ConnectionHooks {
  /** the tool list changed (first discovery or a refresh) */
  catalog(): void;
  /** phase or failure changed (for the status) */
  state(): void;
  log: Logger;
  /** data dir: where OAuth (authorization_code) tokens are kept (engines/mcp/oauth-store.ts) */
  home?: string;
}

const BACKOFF_BASE_MS = 1000;
const BACKOFF_MAX_MS = 60_000;
const MAX_PAGES = 50;
/** clients whose stdio transport refused a message over its size limit (and so closed) */
const oversized = new WeakSet<Client>();

export class McpConnection {
  phase: Phase = "idle";
  /** why the connection is down (phase failed), or the last call failure (ExecutionDenied, ToolGone) */
  failure?: ServiceFailure;
  callFailure?: ServiceFailure;
  tools: UpstreamTool[] = [];
  connectedAt?: string;
  serverName?: string;
  retryAt?: number;

  private client?: Client;
  /** the client of a connect under way (closed at once by close()) */
  private pending?: Client;
  private attempt = 0;
  private gen = 0;
  private timer?: NodeJS.Timeout;
  private connecting?: Promise<void>;
  private refreshing = false;
  private refreshAgain = false;
  private unwatchLogin?: () => void;

  constructor(
    readonly service: string,
    public spec: McpServerSpec,
    private readonly hooks: ConnectionHooks,
  ) {}

  isClosed(): boolean {
    return this.phase === "closed";
  }

  get where(): string {
    return endpointLabel(this.spec);
  }

  private get discoveryMs(): number {
    return (this.spec.discoveryTimeoutSeconds ?? 20) * 1000;
  }

  start(): void {
    if (this.spec.autoConnect === false) return; // idle: connects on first use
    void this.connect();
  }

  /** Connect now unless connected; resolves when ready or failed. */
  ensureConnected(): Promise<void> {
    if (this.phase === "ready" || this.phase === "closed") return Promise.resolve();
    return this.connect();
  }

  private connect(): Promise<void> {
    if (this.phase === "closed") return Promise.resolve();
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    return (this.connecting ??= this.doConnect().finally(() => (this.connecting = undefined)));
  }

  private async doConnect(): Promise<void> {
    const gen = ++this.gen;
    this.phase = "connecting";
    this.retryAt = undefined;
    this.hooks.state();
    const client = new Client({ name: "svc", version: "0.1.0" }, { capabilities: {} });
    this.pending = client;
    let dirty = false;
    // Registered before connect: a service may announce list_changed right after initialize.
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      if (this.client === client) void this.refresh();
      else dirty = true;
    });
    let built: BuiltTransport | undefined;
    try {
      built = buildTransport(this.spec, { home: this.hooks.home, service: this.service });
      const b = built;
      const work = (async () => {
        await client.connect(b.transport, { timeout: this.discoveryMs });
        return this.listAll(client);
      })();
      work.catch(() => undefined);
      const tools = await deadline(work, this.discoveryMs, () =>
        failure("DiscoveryTimeout", `${b.where} did not finish initialize and tools/list within ${this.discoveryMs / 1000} s`),
      );
      if (gen !== this.gen || this.isClosed()) {
        await client.close().catch(() => undefined);
        return;
      }
      this.pending = undefined;
      this.client = client;
      client.onclose = () => {
        if (this.client === client) this.lost(failure("ConnectionRefused", `connection to ${this.where} was lost; reconnecting`));
      };
      // The Streamable HTTP transport re-opens its event stream (GET: list_changed arrives there)
      // a few times and then only reports that it gave up; the connection stays open with no
      // stream, which after an upstream restart also means a session the service forgot. Nothing
      // else would notice until a call failed: reconnect with the service's own backoff instead.
      client.onerror = (e) => {
        const m = (e as Error)?.message ?? "";
        // the stdio transport drops the connection after a message over its size limit: remembered
        // so that the call it ends says why (not "the service closed the connection")
        if (/ReadBuffer exceeded maximum size/.test(m)) oversized.add(client);
        if (this.client === client && /Maximum reconnection attempts/.test(m)) {
          this.lost(failure("ConnectionRefused", `the event stream of ${this.where} broke and could not be reopened; reconnecting`));
        }
      };
      this.attempt = 0;
      this.tools = tools;
      this.failure = undefined;
      this.callFailure = undefined;
      this.phase = "ready";
      this.connectedAt = new Date().toISOString();
      this.serverName = client.getServerVersion()?.name;
      this.hooks.log.info("mcp service connected", { service: this.service, where: this.where, tools: tools.length });
      this.hooks.catalog();
      this.hooks.state();
      if (dirty) void this.refresh();
    } catch (e) {
      if (this.pending === client) this.pending = undefined;
      await client.close().catch(() => undefined);
      if (gen !== this.gen || this.isClosed()) return;
      this.failure = classifyConnectError(e, this.where, built?.stderrTail?.());
      this.phase = "failed";
      this.hooks.log.warn("mcp service connection failed", { service: this.service, reason: this.failure.reason, err: this.failure.message });
      if (this.failure.reason !== "InvalidSpec") this.scheduleReconnect();
      if (this.failure.reason === "AuthorizationRequired") this.reconnectOnLogin();
      this.hooks.state();
    }
  }

  private async listAll(client: Client): Promise<UpstreamTool[]> {
    const out: UpstreamTool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const r = await client.listTools(cursor ? { cursor } : undefined, { timeout: this.discoveryMs });
      for (const t of r.tools) out.push(t as UpstreamTool);
      cursor = r.nextCursor;
      if (!cursor) break;
    }
    return out;
  }

  /** tools/list again (list_changed); the new list replaces the old one as a whole. */
  async refresh(): Promise<void> {
    const client = this.client;
    if (!client || this.phase !== "ready") return;
    if (this.refreshing) {
      this.refreshAgain = true;
      return;
    }
    this.refreshing = true;
    try {
      do {
        this.refreshAgain = false;
        const tools = await deadline(this.listAll(client), this.discoveryMs, () => failure("DiscoveryTimeout", `tools/list of ${this.where} did not answer within ${this.discoveryMs / 1000} s`));
        if (this.client !== client) return;
        this.tools = tools;
        this.hooks.catalog();
      } while (this.refreshAgain);
    } catch (e) {
      if (this.client === client) this.lost(classifyConnectError(e, this.where));
    } finally {
      this.refreshing = false;
    }
  }

  private lost(f: ServiceFailure): void {
    const client = this.client;
    this.client = undefined;
    if (this.phase === "closed") return;
    void client?.close().catch(() => undefined);
    this.phase = "failed";
    this.failure = f;
    this.hooks.log.warn("mcp service connection lost", { service: this.service, reason: f.reason, err: f.message });
    this.scheduleReconnect();
    this.hooks.state();
  }

  private scheduleReconnect(): void {
    if (this.phase === "closed") return;
    const delay = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** Math.min(this.attempt, 16));
    this.attempt++;
    this.retryAt = Date.now() + delay;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.connect();
    }, delay);
    this.timer.unref();
  }

  /** Run one upstream tool. Throws a tool error (toolError) when the call cannot be made. */
  async call(tool: string, args: Record<string, unknown>, opts: ToolCallOptions = {}): Promise<ToolCallResult> {
    if (this.phase === "idle") await this.ensureConnected();
    const client = this.client;
    if (!client || this.phase !== "ready") {
      const why = this.failure ? `: ${this.failure.reason}: ${this.failure.message}` : "";
      throw toolError("service_unavailable", `tool service ${this.service} is not connected${why}`);
    }
    const timeoutMs = (this.spec.toolCallTimeoutSeconds ?? 45) * 1000;
    try {
      // a traced call carries its span's traceparent in _meta, the MCP convention for trace context
      const req = opts.traceparent ? { name: tool, arguments: args, _meta: { traceparent: opts.traceparent } } : { name: tool, arguments: args };
      const r: any = await client.callTool(req, leanCallToolResult as never, {
        timeout: timeoutMs,
        resetTimeoutOnProgress: true,
        onprogress: (p) => opts.onProgress?.({ progress: p.progress, total: p.total, message: p.message }),
        signal: opts.signal,
      });
      if (this.callFailure) {
        this.callFailure = undefined;
        this.hooks.state();
      }
      if (Array.isArray(r.content)) {
        const out: ToolCallResult = { content: r.content as ToolContent[], isError: r.isError === true };
        if (r.structuredContent && typeof r.structuredContent === "object") out.structuredContent = r.structuredContent;
        return out;
      }
      // protocol 2024-10-07 compatibility shape
      return { content: [{ type: "text", text: JSON.stringify(r.toolResult ?? null) }], isError: false };
    } catch (e) {
      if (opts.signal?.aborted) throw e;
      throw this.callError(tool, e, timeoutMs, client);
    }
  }

  private callError(tool: string, e: unknown, timeoutMs: number, client?: Client): SvcError {
    const msg = redactSecrets((e as Error)?.message ?? String(e));
    if (e instanceof McpError) {
      if (e.code === ErrorCode.RequestTimeout) return toolError("tool_timeout", `tool ${tool} of ${this.service} sent no result or progress within ${timeoutMs / 1000} s`);
      if (e.code === ErrorCode.ConnectionClosed) {
        // svc ended the connection, not the service: say why rather than blame the service
        if (this.isClosed()) {
          return toolError("service_unavailable", `the call to ${tool} was ended because McpServer ${this.service} was changed or removed (or svc is stopping), which closes its connection`);
        }
        if (client && oversized.has(client)) {
          return toolError("service_unavailable", `tool service ${this.service} sent a message larger than the ${STDIO_DEFAULT_MAX_BUFFER_SIZE / 1048576} MB limit of one stdio message (its answer to ${tool}); svc dropped the connection and reconnects`);
        }
        return toolError("service_unavailable", `tool service ${this.service} closed the connection during the call`);
      }
      if (e.code === ErrorCode.InvalidParams && /unknown tool|not found/i.test(msg)) {
        this.noteCallFailure(failure("ToolGone", `tool ${tool} is no longer offered by ${this.where}`));
        return toolError("tool_gone", `tool ${tool} is no longer offered by service ${this.service}`);
      }
      // The tool ran and answered, but not as its outputSchema says (the SDK checks the result and
      // raises these): the service's fault, not a refusal to run
      if (/output schema/i.test(msg)) return toolError("tool_output_invalid", `tool ${tool} of ${this.service} answered with output its outputSchema does not allow: ${msg}`);
      // the service refused the arguments (-32602): the caller's to fix, as svc's own check says
      if (e.code === ErrorCode.InvalidParams) return toolError("invalid_arguments", `service ${this.service} refused the arguments of ${tool}: ${msg}`);
      this.noteCallFailure(failure("ExecutionDenied", `${this.where} refused tool ${tool}: ${msg}`));
      return toolError("execution_denied", `service ${this.service} refused to run ${tool}: ${msg}`);
    }
    if (e instanceof StreamableHTTPError && (e.code === 401 || e.code === 403)) {
      this.noteCallFailure(failure("ExecutionDenied", `${this.where} answered HTTP ${e.code} to tool ${tool}`));
      return toolError("execution_denied", `service ${this.service} refused to run ${tool} (HTTP ${e.code})`);
    }
    // Transport failures (an HTTP service restarted and forgot the session, a refused socket):
    // the connection is gone, so reconnect rather than fail every later call the same way.
    if (this.client) this.lost(classifyConnectError(e, this.where));
    return toolError("service_unavailable", `tool service ${this.service} failed: ${msg}`);
  }

  noteCallFailure(f: ServiceFailure): void {
    this.callFailure = f;
    this.hooks.state();
  }

  /** `svc mcp login` (another process) wrote tokens: connect now rather than at the next retry. */
  private reconnectOnLogin(): void {
    if (this.unwatchLogin || !this.hooks.home) return;
    this.unwatchLogin = watchOAuthState(this.hooks.home, this.service, () => {
      this.unwatchLogin?.();
      this.unwatchLogin = undefined;
      if (this.phase === "failed") void this.connect();
    });
  }

  async close(): Promise<void> {
    this.unwatchLogin?.();
    this.unwatchLogin = undefined;
    this.phase = "closed";
    this.gen++;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const c = this.client;
    const p = this.pending;
    this.client = undefined;
    this.pending = undefined;
    this.tools = [];
    await Promise.all([c?.close().catch(() => undefined), p?.close().catch(() => undefined)]);
  }
}

/** Resolve with `p`, or reject with `onTimeout()` after `ms`. */
export function deadline<T>(p: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onTimeout()), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}
