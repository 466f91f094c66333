// A stand-in MCP tool service over Streamable HTTP on loopback, in the test process, so a test can
// count a tool's side effects whichever svc process calls it. Tool "work" counts each call and
// never answers (a task stays mid-run on it); "done" counts and answers at once.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

export interface ToolStandIn {
  url: string;
  calls: Map<string, number>;
  close(): Promise<void>;
}

export async function toolStandIn(): Promise<ToolStandIn> {
  const calls = new Map<string, number>();
  const obj = { type: "object", properties: {} };
  const make = () => {
    const s = new Server({ name: "stand-in", version: "1.0.0" }, { capabilities: { tools: {} } });
    s.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [
        { name: "work", description: "Counts the call and never finishes", inputSchema: obj },
        { name: "done", description: "Counts the call", inputSchema: obj },
      ],
    }));
    s.setRequestHandler(CallToolRequestSchema, async (req) => {
      calls.set(req.params.name, (calls.get(req.params.name) ?? 0) + 1);
      if (req.params.name === "work") await new Promise(() => undefined);
      return { content: [{ type: "text", text: "done" }] };
    });
    return s;
  };
  const server = http.createServer(async (req, res) => {
    // stateless: one server and transport per request
    const t = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => void t.close());
    await make().connect(t);
    await t.handleRequest(req, res);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    calls,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
