// The cheaper checks of a tool service's messages (engines/mcp/lean-messages.ts) give what the
// SDK's schemas give: the same message for the common shapes, the schema's rewrite or error for
// the rest.
import { describe, expect, it } from "vitest";
import { CallToolResultSchema, JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js";
import { LeanReadBuffer, leanCallToolResult } from "../../engines/mcp/lean-messages";

const lines = (...ms: unknown[]) => Buffer.from(ms.map((m) => JSON.stringify(m) + "\n").join(""));

function readAll(buf: LeanReadBuffer): unknown[] {
  const out: unknown[] = [];
  for (let m = buf.readMessage(); m !== null; m = buf.readMessage()) out.push(m);
  return out;
}

describe("lean MCP message checks", () => {
  it("reads every kind of line as JSONRPCMessageSchema parses it", () => {
    const ms = [
      { jsonrpc: "2.0", id: 1, result: { content: [{ type: "text", text: "hi" }] } },
      { jsonrpc: "2.0", id: "a", result: { _meta: { x: 1 }, content: [] } },
      { jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: 1, progress: 1 } },
      { jsonrpc: "2.0", id: 2, error: { code: -32602, message: "bad" } },
      { jsonrpc: "2.0", id: 3, method: "ping" },
    ];
    const buf = new LeanReadBuffer();
    const all = lines(...ms);
    buf.append(all.subarray(0, 10)); // a line split across chunks
    expect(buf.readMessage()).toBeNull();
    buf.append(all.subarray(10));
    expect(readAll(buf)).toEqual(ms.map((m) => JSONRPCMessageSchema.parse(m)));
  });

  it("refuses what the SDK refuses, with its error", () => {
    for (const bad of [{ jsonrpc: "2.0", id: 1.5, result: {} }, { jsonrpc: "2.0", id: 1, result: {}, extra: true }, { jsonrpc: "1.0", id: 1, result: {} }]) {
      const buf = new LeanReadBuffer();
      buf.append(lines(bad));
      expect(() => buf.readMessage()).toThrow();
      expect(JSONRPCMessageSchema.safeParse(bad).success).toBe(false);
    }
  });

  it("keeps the SDK's size limit", () => {
    const buf = new LeanReadBuffer(8);
    expect(() => buf.append(Buffer.from("0123456789"))).toThrow(/exceeded maximum size of 8 bytes/);
  });

  it("checks a tools/call result as CallToolResultSchema does", () => {
    const results: unknown[] = [
      { content: [{ type: "text", text: "a" }, { type: "text", text: "b" }], isError: false },
      { content: [{ type: "text", text: "a" }], structuredContent: { n: 1 }, extra: "kept" },
      { content: [{ type: "text", text: "a", stray: 1 }] }, // the schema strips `stray`
      { content: [{ type: "image", data: "AAAA", mimeType: "image/png" }] },
      {}, // content defaults to []
      { toolResult: 42 },
    ];
    for (const r of results) expect(leanCallToolResult.safeParse(r)).toEqual(CallToolResultSchema.safeParse(r));
    for (const bad of [{ content: "x" }, { content: [], isError: "yes" }, { content: [{ type: "text", text: 1 }] }, { content: [], structuredContent: [1] }]) {
      const lean = leanCallToolResult.safeParse(bad);
      expect(lean.success).toBe(false);
      expect(lean).toEqual(CallToolResultSchema.safeParse(bad));
    }
  });
});
