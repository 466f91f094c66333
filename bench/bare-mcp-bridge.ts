// The bare MCP bridge: what Node and the official SDK allow for `/mcp`'s job, as a path beside svc
// in `npm run bench -- mcp` (as bench/bare-gateway.ts is for the gateway). node:http takes a
// Streamable HTTP POST, and a tools/call is passed to the stdio server through the SDK's own stdio
// Client; its result is answered as application/json. No key, exposure check, argument validation,
// audit or session store: one session, the fewest steps the protocol allows.
//   node --import tsx bench/bare-mcp-bridge.ts <server script> [args...]   (prints its port)
import http from "node:http";
import { randomUUID } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [script, ...args] = process.argv.slice(2);
const client = new Client({ name: "bare-bridge", version: "1" });
await client.connect(new StdioClientTransport({ command: process.execPath, args: [script, ...args], stderr: "ignore" }));
const session = randomUUID();

function answer(res: http.ServerResponse, status: number, body?: unknown, headers: Record<string, string> = {}): void {
  if (body === undefined) {
    res.writeHead(status, headers).end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers }).end(text);
}

const server = http.createServer((req, res) => {
  if (req.method === "DELETE") return answer(res, 200);
  if (req.method !== "POST") return answer(res, 405, undefined, { allow: "POST, DELETE" }); // no standalone SSE stream
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    let msg: { id?: string | number; method?: string; params?: { name: string; arguments?: Record<string, unknown> } };
    try {
      msg = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      return answer(res, 400);
    }
    if (msg.id === undefined) return answer(res, 202); // a notification
    if (msg.method === "initialize") {
      const result = { protocolVersion: "2025-06-18", capabilities: { tools: {} }, serverInfo: { name: "bare-bridge", version: "1" } };
      return answer(res, 200, { jsonrpc: "2.0", id: msg.id, result }, { "mcp-session-id": session });
    }
    if (msg.method !== "tools/call" || !msg.params) return answer(res, 200, { jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "not here" } });
    client.callTool(msg.params).then(
      (result) => answer(res, 200, { jsonrpc: "2.0", id: msg.id, result }),
      (e: Error) => answer(res, 200, { jsonrpc: "2.0", id: msg.id, error: { code: -32603, message: e.message } }),
    );
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  const addr = server.address();
  process.stdout.write(`${typeof addr === "object" && addr ? addr.port : 0}\n`);
});
