// The MCP engine: holds one connection per enabled McpServer and merges their tools with svc's
// built-ins into the one tool catalog (the ToolRegistry agents and the exposed-tool routes use).
// Each change (connect, refresh, settings, disable, delete) rebuilds the catalog and swaps it in
// as a whole, so a reader never sees half of an old list and half of a new one.
import type { ValidateFunction } from "ajv";
import type { McpServerSpec } from "../../schemas/kinds/mcp-server";
import type { Logger } from "../host";
import type { SvcError } from "../errors";
import { isToolError, toolError, type ToolCallOptions, type ToolCallResult, type ToolInfo, type ToolRegistry } from "../tools/types";
import type { BuiltinTool } from "../tools/builtins";
import { argumentProblem, compileSchema, type Compiled } from "../tools/validate";
import type { McpConnection, Phase } from "./connection";
import { exposable, type UpstreamTool } from "./exposure";
import { assignNames, serviceSlug } from "./names";
import { failure, type ServiceFailure } from "./failures";

interface Entry {
  info: ToolInfo;
  builtin?: BuiltinTool;
  service?: string;
  upstream?: string;
  validate?: ValidateFunction;
}

export interface ServiceState {
  phase: Phase | "disabled";
  where: string;
  failure?: ServiceFailure;
  callFailure?: ServiceFailure;
  /** tools in the catalog from this service, and how many of them are exposable */
  tools: number;
  exposed: number;
  /** upstream tools left out because their inputSchema does not compile */
  schemaErrors: string[];
  retryAt?: number;
  serverName?: string;
}

interface Held {
  conn: McpConnection;
  fingerprint: string;
}

const MAX_GONE = 1000;

/** The capability tags of one tool: the service's own plus the tool's (no field when none). */
function tagsOf(spec: McpServerSpec, tool: string): { capabilities?: string[] } {
  const tags = [...new Set([...(spec.capabilities ?? []), ...(spec.tools?.[tool]?.capabilities ?? [])])];
  return tags.length ? { capabilities: tags } : {};
}

/** The connection-relevant part of a spec: a change here means a new connection. */
function fingerprint(s: McpServerSpec): string {
  const { transport, url, command, args, cwd, env, envFrom, auth, discoveryTimeoutSeconds, autoConnect } = s;
  return JSON.stringify({ transport, url, command, args, cwd, env, envFrom, auth, discoveryTimeoutSeconds, autoConnect });
}

export class McpEngine implements ToolRegistry {
  private readonly held = new Map<string, Held>();
  private entries = new Map<string, Entry>();
  private listing: ToolInfo[] = [];
  private readonly gone = new Map<string, { service: string; tool: string }>();
  private readonly schemaErrors = new Map<string, string[]>();
  private readonly compiled = new Map<string, Compiled>();
  private readonly listeners = new Set<() => void>();
  private readonly closeListeners = new Set<() => Promise<void> | void>();
  private signature = "";
  private closed = false;

  constructor(
    private readonly o: {
      log: Logger;
      builtins: BuiltinTool[];
      /** data dir (OAuth tokens of authorization_code services) */
      home?: string;
      /** a service's status changed (the controller re-reads it) */
      onStatus?: (service: string) => void;
      /** a tool call ended: service (McpServer name, or "builtin") and outcome (metrics) */
      onCall?: (service: string, outcome: string) => void;
    },
  ) {
    this.rebuild();
  }

  // ---- ToolRegistry ----------------------------------------------------------------------

  list(): ToolInfo[] {
    return this.listing;
  }

  get(name: string): ToolInfo | undefined {
    return this.entries.get(name)?.info;
  }

  async call(name: string, args: Record<string, unknown>, opts: ToolCallOptions = {}): Promise<ToolCallResult> {
    const e = this.entries.get(name) ?? (await this.connectLazily(name));
    if (!e) throw this.missing(name);
    if (!this.o.onCall) return this.invoke(e, name, args ?? {}, opts);
    const service = e.service ?? "builtin";
    try {
      const r = await this.invoke(e, name, args ?? {}, opts);
      this.o.onCall(service, r.isError ? "tool_error" : "success");
      return r;
    } catch (err) {
      this.o.onCall(service, isToolError(err) ? err.code : "error");
      throw err;
    }
  }

  private async invoke(e: Entry, name: string, a: Record<string, unknown>, opts: ToolCallOptions): Promise<ToolCallResult> {
    if (e.validate) {
      const p = argumentProblem(e.validate, a);
      if (p) throw toolError("invalid_arguments", `arguments for ${name} do not match its schema: ${p.message}`, p.path);
    }
    if (e.builtin) return e.builtin.run(a, opts);
    return this.held.get(e.service!)!.conn.call(e.upstream!, a, opts);
  }

  async resolve(name: string): Promise<ToolInfo> {
    const e = this.entries.get(name) ?? (await this.connectLazily(name));
    if (!e) throw this.missing(name);
    return e.info;
  }

  private missing(name: string): SvcError {
    const g = this.gone.get(name);
    if (g) {
      this.held.get(g.service)?.conn.noteCallFailure(failure("ToolGone", `a call named ${name} (tool ${g.tool}), which left the catalog in a refresh`));
      return toolError("tool_gone", `tool ${name} disappeared when service ${g.service} refreshed its catalog; list the tools again`);
    }
    return toolError("tool_not_found", `no tool named ${JSON.stringify(name)}`);
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  // ---- the McpServer controller's side ---------------------------------------------------

  /** Converge one service to its spec: connect, reconnect on a connection change, or drop it. */
  async apply(service: string, spec: McpServerSpec): Promise<void> {
    if (this.closed) return;
    const cur = this.held.get(service);
    if (spec.enabled === false) {
      if (cur) await this.drop(service);
      return;
    }
    const fp = fingerprint(spec);
    if (cur && cur.fingerprint === fp) {
      cur.conn.spec = spec; // call timeout, tool settings and exposure apply without reconnecting
      this.rebuild();
      return;
    }
    if (cur) await this.drop(service);
    // the connection code and the MCP SDK load with the first McpServer, not with svc
    const { McpConnection } = await import("./connection");
    if (this.closed) return;
    if (this.held.has(service)) return this.apply(service, spec); // applied again meanwhile: converge from there
    const conn = new McpConnection(service, spec, {
      log: this.o.log,
      home: this.o.home,
      catalog: () => {
        if (this.held.get(service)?.conn === conn) this.rebuild();
      },
      state: () => {
        if (this.held.get(service)?.conn === conn) this.o.onStatus?.(service);
      },
    });
    this.held.set(service, { conn, fingerprint: fp });
    conn.start();
  }

  /** Close the connection and remove the service's tools (disable, delete). */
  async drop(service: string): Promise<void> {
    const h = this.held.get(service);
    if (!h) return;
    this.held.delete(service);
    this.schemaErrors.delete(service);
    for (const [n, g] of this.gone) if (g.service === service) this.gone.delete(n);
    this.rebuild();
    await h.conn.close();
  }

  state(service: string): ServiceState | undefined {
    const h = this.held.get(service);
    if (!h) return undefined;
    let tools = 0;
    let exposed = 0;
    for (const e of this.entries.values()) {
      if (e.service !== service) continue;
      tools++;
      if (e.info.exposable) exposed++;
    }
    const c = h.conn;
    return {
      phase: c.phase,
      where: c.where,
      failure: c.failure,
      callFailure: c.callFailure,
      tools,
      exposed,
      schemaErrors: this.schemaErrors.get(service) ?? [],
      retryAt: c.retryAt,
      serverName: c.serverName,
    };
  }

  /** Run before the listener closes: end long-lived client sessions (the /mcp endpoint). */
  onClose(f: () => Promise<void> | void): () => void {
    this.closeListeners.add(f);
    return () => this.closeListeners.delete(f);
  }

  async closeSessions(): Promise<void> {
    for (const f of [...this.closeListeners]) await Promise.resolve(f()).catch(() => undefined);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.closeSessions();
    const all = [...this.held.values()];
    this.held.clear();
    this.rebuild();
    await Promise.allSettled(all.map((h) => h.conn.close()));
  }

  // ---- catalog ---------------------------------------------------------------------------

  /** A name no entry has: an idle (autoConnect: false) service whose namespace it is in connects now. */
  private async connectLazily(name: string): Promise<Entry | undefined> {
    const waits: Promise<void>[] = [];
    for (const [service, h] of this.held) {
      if (h.conn.phase === "idle" && name.startsWith(serviceSlug(service) + "_")) waits.push(h.conn.ensureConnected());
    }
    if (!waits.length) return undefined;
    await Promise.all(waits);
    return this.entries.get(name);
  }

  private readonly builtinEntries = new Map<BuiltinTool, Entry>();

  private builtinEntry(b: BuiltinTool): Entry {
    let e = this.builtinEntries.get(b);
    if (!e) {
      const c = compileSchema(b.info.inputSchema);
      e = { info: b.info, builtin: b, validate: c.ok ? c.validate : undefined };
      this.builtinEntries.set(b, e);
    }
    return e;
  }

  private compile(service: string, t: UpstreamTool): Compiled {
    const key = `${service}\0${t.name}\0${JSON.stringify(t.inputSchema)}`;
    let c = this.compiled.get(key);
    if (!c) {
      c = compileSchema(t.inputSchema);
      this.compiled.set(key, c);
    }
    return c;
  }

  private rebuild(): void {
    type Pair = { service: string; tool: string; t: UpstreamTool; spec: McpServerSpec };
    const pairs: Pair[] = [];
    for (const [service, h] of this.held) {
      for (const t of h.conn.tools) {
        if (h.conn.spec.tools?.[t.name]?.enabled === false) continue;
        pairs.push({ service, tool: t.name, t, spec: h.conn.spec });
      }
    }
    const builtins = this.closed ? [] : this.o.builtins;
    const reserved = new Set(builtins.map((b) => b.info.name));
    const names = assignNames(pairs, reserved);

    const next = new Map<string, Entry>();
    const errors = new Map<string, string[]>();
    const usedKeys = new Set<string>();
    for (const b of builtins) next.set(b.info.name, this.builtinEntry(b));
    const mcp: Entry[] = [];
    for (const p of pairs) {
      const c = this.compile(p.service, p.t);
      usedKeys.add(`${p.service}\0${p.t.name}\0${JSON.stringify(p.t.inputSchema)}`);
      if (!c.ok) {
        const list = errors.get(p.service) ?? [];
        list.push(`${p.tool}: ${c.message}`);
        errors.set(p.service, list);
        continue;
      }
      const name = names.get(p)!;
      mcp.push({
        info: {
          name,
          description: p.t.description ?? p.t.title,
          inputSchema: p.t.inputSchema,
          source: { kind: "mcp", server: p.service, tool: p.tool },
          exposable: exposable(p.t, p.spec.tools?.[p.tool], p.spec.exposeDefault),
          protected: false,
          ...(p.t.annotations ? { annotations: p.t.annotations } : {}),
          ...tagsOf(p.spec, p.tool),
        },
        service: p.service,
        upstream: p.tool,
        validate: c.validate,
      });
    }
    mcp.sort((a, b) => (a.info.name < b.info.name ? -1 : a.info.name > b.info.name ? 1 : 0));
    for (const e of mcp) next.set(e.info.name, e);
    for (const k of this.compiled.keys()) if (!usedKeys.has(k)) this.compiled.delete(k);

    // Tools that left a still-connected service's list: a later call is ToolGone, not "not found".
    for (const [name, e] of this.entries) {
      if (!e.service || next.has(name)) continue;
      const h = this.held.get(e.service);
      if (h && !h.conn.tools.some((t) => t.name === e.upstream)) this.gone.set(name, { service: e.service, tool: e.upstream! });
    }
    for (const name of next.keys()) this.gone.delete(name);
    while (this.gone.size > MAX_GONE) this.gone.delete(this.gone.keys().next().value!);

    const changedErrors: string[] = [];
    for (const s of new Set([...errors.keys(), ...this.schemaErrors.keys()])) {
      if (JSON.stringify(errors.get(s) ?? []) !== JSON.stringify(this.schemaErrors.get(s) ?? [])) changedErrors.push(s);
      if (errors.has(s)) this.schemaErrors.set(s, errors.get(s)!);
      else this.schemaErrors.delete(s);
    }

    this.entries = next;
    this.listing = [...next.values()].map((e) => e.info);
    const sig = JSON.stringify(this.listing.map((i) => [i.name, i.exposable, i.description, i.inputSchema, i.capabilities]));
    for (const s of changedErrors) this.o.onStatus?.(s);
    if (sig !== this.signature) {
      this.signature = sig;
      for (const l of [...this.listeners]) {
        try {
          l();
        } catch (e) {
          this.o.log.warn("tool catalog listener failed", { err: String((e as Error)?.message ?? e) });
        }
      }
    }
  }
}
