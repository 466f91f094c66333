// `svc mcp`: a stdio MCP server for desktop MCP clients, bridging to the running svc's exposed
// tools. It is an MCP client of svc's /mcp endpoint (so exposure, key permissions and
// list_changed are exactly the server's) and an MCP server on stdin/stdout. The key, when svc
// needs one, comes from SVC_MCP_ACCESS_KEY and is sent as the bearer. stdout carries only the
// protocol; messages go to stderr.
import type { Command } from "commander";
import { addTargetOptions } from "./config";
import { probe, resolveTarget, type TargetOptions } from "./connect";
import { CliError } from "./errors";

export function registerMcp(program: Command): void {
  const mcp = addTargetOptions(program.command("mcp").description("stdio MCP server bridging to the running svc's exposed tools (key: SVC_MCP_ACCESS_KEY)")).action(
    async (o: TargetOptions) => runBridge(o),
  );
  addTargetOptions(
    mcp
      .command("login <server>")
      .description("authorize svc for an McpServer using OAuth (auth.type oauth, grant authorization_code): prints the URL to open, waits for the redirect on a loopback callback, stores the tokens encrypted in the data dir"),
  ).action(async (server: string, o: TargetOptions, cmd: Command) => (await import("./mcp-login")).mcpLogin(server, { ...(cmd.parent?.opts() as TargetOptions), ...o })); // --port/--home may land on `mcp`
}

async function runBridge(o: TargetOptions): Promise<void> {
  const target = await resolveTarget(o);
  const p = await probe(target.base);
  if (!p.ok) throw new CliError(`svc mcp: svc is not running (no answer at ${target.base}: ${p.error}); start it with \`svc serve\`, or pass --port / set SVC_PORT`);
  const key = process.env.SVC_MCP_ACCESS_KEY?.trim();
  // the MCP SDK (and zod under it) is loaded by this command only, not by every `svc` run
  const [{ Client }, { StreamableHTTPClientTransport }, { Server }, { StdioServerTransport }, { CallToolRequestSchema, ListToolsRequestSchema, ToolListChangedNotificationSchema }] = await Promise.all([
    import("@modelcontextprotocol/sdk/client/index.js"),
    import("@modelcontextprotocol/sdk/client/streamableHttp.js"),
    import("@modelcontextprotocol/sdk/server/index.js"),
    import("@modelcontextprotocol/sdk/server/stdio.js"),
    import("@modelcontextprotocol/sdk/types.js"),
  ]);
  const upstream = new Client({ name: "svc-mcp-bridge", version: "0.1.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${target.base}/mcp`), {
    requestInit: key ? { headers: { authorization: `Bearer ${key}` } } : undefined,
  });
  try {
    await upstream.connect(transport);
  } catch (e) {
    const m = (e as Error).message;
    const why = /invalid_api_key|key_revoked|key_expired/.test(m)
      ? `svc refused the key${key ? " in SVC_MCP_ACCESS_KEY" : ": set SVC_MCP_ACCESS_KEY to an sk-svc key"}`
      : /permission_denied|ip_not_allowed/.test(m)
        ? "the key may not call tools (its permissions.actions needs tools:call)"
        : m;
    throw new CliError(`svc mcp: cannot open ${target.base}/mcp: ${why}`);
  }

  const server = new Server({ name: "svc", version: "0.1.0" }, { capabilities: { tools: { listChanged: true } } });
  server.setRequestHandler(ListToolsRequestSchema, async (req) => upstream.listTools(req.params));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const token = req.params._meta?.progressToken;
    return upstream.callTool({ name: req.params.name, arguments: req.params.arguments }, undefined, {
      signal: extra.signal,
      timeout: 3_600_000, // svc applies each service's own tool-call timeout
      onprogress: token === undefined ? undefined : (pr) => void extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, ...pr } }).catch(() => undefined),
    }) as any;
  });
  upstream.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
    await server.sendToolListChanged().catch(() => undefined);
  });

  const done = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
    process.stdin.once("end", () => resolve()); // the MCP client went away
    upstream.onclose = () => {
      process.stderr.write(`svc mcp: the connection to ${target.base} closed\n`);
      resolve();
    };
  });
  await server.connect(new StdioServerTransport());
  await done;
  await upstream.close().catch(() => undefined);
  await server.close().catch(() => undefined);
}
