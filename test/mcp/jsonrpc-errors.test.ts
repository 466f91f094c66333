// A malformed tools/call on an open /mcp session is the client's mistake: it is answered with the
// JSON-RPC error for it, -32602 Invalid params, saying which field is wrong, never -32603 Internal
// error (the JSON-RPC equivalent of a 500).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSvc, type TestSvc } from "../helpers/svc";
import { apply, mcpDoc, node, tiny, waitReason } from "./helpers";

const H = { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18" };

/** The one JSON-RPC message of an answer, whether it came as JSON or as one SSE event. */
async function message(r: Response): Promise<any> {
  const text = await r.text();
  if ((r.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    const data = text.split("\n").find((l) => l.startsWith("data: "));
    return JSON.parse(data!.slice(6));
  }
  return JSON.parse(text);
}

describe("/mcp: malformed tools/call requests", () => {
  let s: TestSvc;
  let sid: string;
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${s.url}/mcp`, { method: "POST", headers: { ...H, ...headers }, body: JSON.stringify(body), signal: AbortSignal.timeout(30_000) });

  beforeAll(async () => {
    s = await startTestSvc();
    await apply(s, [mcpDoc("tiny", { transport: "stdio", command: node, args: [tiny] })]);
    await waitReason(s, "tiny", "Connected");
    const init = await post({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } });
    expect(init.status).toBe(200);
    sid = init.headers.get("mcp-session-id")!;
    await init.text();
    expect((await post({ jsonrpc: "2.0", method: "notifications/initialized" }, { "mcp-session-id": sid })).status).toBe(202);
  });
  afterAll(async () => {
    await s?.stop();
  });

  it.each([
    ["a name that is not a string", { name: 5 }, /name/],
    ["arguments that are an array", { name: "tiny_echo", arguments: ["hi"] }, /arguments/],
    ["arguments that are a string", { name: "tiny_echo", arguments: "hi" }, /arguments/],
    ["no name", { arguments: { message: "hi" } }, /name/],
  ])("%s is -32602 Invalid params naming the field", async (_label, params, field) => {
    const r = await post({ jsonrpc: "2.0", id: 7, method: "tools/call", params }, { "mcp-session-id": sid });
    expect(r.status).toBe(200);
    const m = await message(r);
    expect(m.id).toBe(7);
    expect(m.error.code).toBe(-32602);
    expect(m.error.message).toMatch(field);
  });

  it("a well-formed call on the same session still works", async () => {
    const r = await post({ jsonrpc: "2.0", id: 8, method: "tools/call", params: { name: "tiny_echo", arguments: { message: "fine" } } }, { "mcp-session-id": sid });
    expect((await message(r)).result.content).toEqual([{ type: "text", text: "echo: fine" }]);
  });
});
