// A plain tools/call on an open /mcp session, answered as application/json without the SDK's
// server transport. The Streamable HTTP spec lets a POST's answer be JSON or SSE; SSE is needed
// only when the server sends messages before the result, which for svc means progress. So a
// single tools/call request without `_meta.progressToken` is run here, and every other message
// (a progress token, a batch, lists, notifications, a header the SDK would refuse) still goes to
// the SDK's transport, which gives those answers and errors. The SDK path cost about 1 ms of CPU
// per call in svc's process: Node request to Web Request conversion, zod parsing of the message,
// the Protocol's dispatch and an SSE stream for one event (bench/mcp.ts).
import type { IncomingMessage, ServerResponse } from "node:http";
import { ErrorCode, McpError, SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/sdk/types.js";
import type { ToolRegistry } from "../engines/tools/types";
import { runExposedCall } from "./mcp-exposed-call";

export interface PlainToolCall {
  jsonrpc: "2.0";
  id: string | number;
  method: "tools/call";
  params: { name: string; arguments?: Record<string, unknown>; _meta?: Record<string, unknown> };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The message is one tools/call request svc may answer with JSON, and the request's headers are
 * ones the SDK's transport accepts (otherwise the SDK answers, with its own error). */
export function plainToolCall(req: IncomingMessage, body: unknown): PlainToolCall | undefined {
  if (req.method !== "POST" || !isObject(body) || body.method !== "tools/call" || body.jsonrpc !== "2.0") return undefined;
  const id = body.id;
  if (typeof id !== "string" && !(typeof id === "number" && Number.isInteger(id))) return undefined;
  const p = body.params;
  if (!isObject(p) || typeof p.name !== "string") return undefined;
  if (p.arguments !== undefined && !isObject(p.arguments)) return undefined;
  if (p._meta !== undefined && (!isObject(p._meta) || p._meta.progressToken !== undefined)) return undefined; // progress needs SSE
  const h = req.headers;
  const accept = h.accept ?? "";
  if (!accept.includes("application/json") || !accept.includes("text/event-stream")) return undefined;
  if ((h["content-type"] ?? "").split(";")[0].trim().toLowerCase() !== "application/json") return undefined;
  const version = h["mcp-protocol-version"];
  if (version !== undefined && (typeof version !== "string" || !SUPPORTED_PROTOCOL_VERSIONS.includes(version))) return undefined;
  return body as unknown as PlainToolCall;
}

/** Run the call and answer it as one JSON-RPC response; `done` gets the audit status. A client
 * that goes away (closed connection, or notifications/cancelled through `signal`) gets no answer. */
export async function answerPlainToolCall(
  registry: ToolRegistry,
  msg: PlainToolCall,
  sessionId: string,
  res: ServerResponse,
  abort: AbortController,
  done: (status: string) => void,
): Promise<void> {
  const onClose = () => {
    if (!res.writableFinished) abort.abort();
  };
  res.on("close", onClose);
  let answer: Record<string, unknown>;
  try {
    const r = await runExposedCall(registry, msg.params.name, msg.params.arguments ?? {}, abort.signal, undefined, done);
    answer = { jsonrpc: "2.0", id: msg.id, result: r };
  } catch (e) {
    // as the SDK's Protocol answers a handler's error
    const err = e as McpError;
    const code = Number.isSafeInteger(err?.code) ? err.code : ErrorCode.InternalError;
    answer = { jsonrpc: "2.0", id: msg.id, error: { code, message: err?.message ?? "Internal error", ...(err?.data !== undefined ? { data: err.data } : {}) } };
  } finally {
    res.off("close", onClose);
  }
  if (abort.signal.aborted || res.destroyed) {
    if (!res.writableEnded) res.destroy(); // cancelled: the SDK sends no response either
    return;
  }
  const text = JSON.stringify(answer);
  res.writeHead(200, { "content-type": "application/json", "mcp-session-id": sessionId, "content-length": Buffer.byteLength(text) });
  res.end(text);
}
