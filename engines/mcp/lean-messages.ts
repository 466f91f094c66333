// Cheaper checks of what a tool service sends back, with the SDK's zod schemas kept for anything
// unusual. The SDK parses every stdio line with JSONRPCMessageSchema (a union of four strict
// objects) and every tools/call result with CallToolResultSchema; on a fast tool those two zod
// parses were about a tenth of svc's CPU per exposed call. The common shapes are recognised here by
// a plain check that accepts only what those schemas accept unchanged (no key they would strip or
// default), and everything else still goes through the schemas, so errors stay the SDK's.
import { STDIO_DEFAULT_MAX_BUFFER_SIZE } from "@modelcontextprotocol/sdk/shared/stdio.js";
import { CallToolResultSchema, JSONRPCMessageSchema, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isRequestId = (v: unknown) => typeof v === "string" || (typeof v === "number" && Number.isInteger(v));
/** the keys of a parsed JSON object, counted without the array Object.keys makes */
function keyCount(o: Record<string, unknown>): number {
  let n = 0;
  for (const _ in o) n++;
  return n;
}

/** A JSON-RPC result response `{jsonrpc, id, result}` with nothing JSONRPCResultResponseSchema
 * (strict) or ResultSchema (`_meta`) would refuse or rewrite. */
function plainResultResponse(m: unknown): boolean {
  return isPlainObject(m) && m.jsonrpc === "2.0" && isRequestId(m.id) && isPlainObject(m.result) && m.result._meta === undefined && keyCount(m) === 3;
}

/** A text block with only `type` and `text` (TextContentSchema would strip other keys). */
function plainText(b: unknown): boolean {
  return isPlainObject(b) && b.type === "text" && typeof b.text === "string" && keyCount(b) === 2;
}

/** The result schema svc passes to `client.callTool`: the SDK calls its `safeParse` (a schema
 * without zod 4's `_zod` is called that way). A result of text blocks is passed as it is; any
 * other goes through CallToolResultSchema. */
export const leanCallToolResult = {
  safeParse(data: unknown): { success: true; data: unknown } | { success: false; error: unknown } {
    if (
      isPlainObject(data) &&
      data._meta === undefined &&
      Array.isArray(data.content) &&
      data.content.every(plainText) &&
      (data.isError === undefined || typeof data.isError === "boolean") &&
      (data.structuredContent === undefined || isPlainObject(data.structuredContent))
    ) {
      return { success: true, data };
    }
    return CallToolResultSchema.safeParse(data);
  },
};

/** The stdio transport's line buffer (the SDK's ReadBuffer, same size limit and errors), with a
 * result response recognised without the union parse. */
export class LeanReadBuffer {
  private buffer?: Buffer;

  constructor(private readonly maxBufferSize = STDIO_DEFAULT_MAX_BUFFER_SIZE) {}

  append(chunk: Buffer): void {
    const size = (this.buffer?.length ?? 0) + chunk.length;
    if (size > this.maxBufferSize) {
      this.clear();
      throw new Error(`ReadBuffer exceeded maximum size of ${this.maxBufferSize} bytes`);
    }
    this.buffer = this.buffer ? Buffer.concat([this.buffer, chunk]) : chunk;
  }

  readMessage(): JSONRPCMessage | null {
    if (!this.buffer) return null;
    const index = this.buffer.indexOf(10); // "\n"
    if (index === -1) return null;
    const line = this.buffer.toString("utf8", 0, index).replace(/\r$/, "");
    this.buffer = index + 1 === this.buffer.length ? undefined : this.buffer.subarray(index + 1);
    const m: unknown = JSON.parse(line);
    return plainResultResponse(m) ? (m as JSONRPCMessage) : JSONRPCMessageSchema.parse(m);
  }

  clear(): void {
    this.buffer = undefined;
  }
}
