// Bedrock ConverseStream: the body is application/vnd.amazon.eventstream, binary frames decoded
// with @smithy/eventstream-codec. Each event message names its type in the `:event-type` header
// (messageStart, contentBlockStart, contentBlockDelta, contentBlockStop, messageStop, metadata)
// and carries JSON; an `:message-type: exception` frame is a failure mid-stream. The codec's
// packages load with the first stream (a server without a bedrock Provider keeps none of them).
import type { Dispatcher } from "undici";
import type { Cancellation } from "../../chat/cancel";
import type { ChatEvent, ChatRequest } from "../../chat/types";
import { estimateTokens } from "../estimate";
import { isAbort, transportError, upstreamError, upstreamText } from "../http";
import type { RouteTarget } from "../types";
import { SvcError } from "../../errors";
import { finishOf } from "./response";

let modules: Promise<[typeof import("@smithy/eventstream-codec"), typeof import("@smithy/util-utf8")]> | undefined;
const codecModules = () => (modules ??= Promise.all([import("@smithy/eventstream-codec"), import("@smithy/util-utf8")]));

/** The decoded event messages of an event-stream body. */
async function* frames(t: RouteTarget, res: Dispatcher.ResponseData, cancel?: Cancellation): AsyncGenerator<{ type: string; messageType: string; body: any }> {
  const [{ EventStreamCodec }, { fromUtf8, toUtf8 }] = await codecModules();
  const codec = new EventStreamCodec(toUtf8, fromUtf8);
  let buf: Buffer = Buffer.alloc(0);
  try {
    for await (const chunk of res.body) {
      buf = buf.length ? Buffer.concat([buf, chunk as Buffer]) : (chunk as Buffer);
      // a frame starts with its total length (4 bytes, big-endian); the codec decodes whole frames
      while (buf.length >= 4 && buf.length >= buf.readUInt32BE(0)) {
        const len = buf.readUInt32BE(0);
        const m = codec.decode(buf.subarray(0, len));
        buf = buf.subarray(len);
        const h = m.headers;
        const text = toUtf8(m.body);
        let body: any = {};
        try {
          body = text ? JSON.parse(text) : {};
        } catch {
          body = { message: text };
        }
        const messageType = String(h[":message-type"]?.value ?? "event");
        const type = String((messageType === "event" ? h[":event-type"] : h[":exception-type"])?.value ?? "");
        yield { type, messageType, body };
      }
    }
  } catch (e) {
    if (isAbort(e, cancel)) throw e;
    if (e instanceof SvcError) throw e; // already mapped (an upstream error frame)
    throw transportError(t.provider, e, t.timeoutMs, true);
  } finally {
    if (!res.body.readableEnded && !res.body.destroyed) res.body.destroy();
  }
}

/** An exception frame as svc's error. ConverseStream may report throttling or a refused request
 * as the first frame of a 200 answer rather than as an HTTP status: before any event has reached
 * the caller that is the same failure as a 429 / 400 answer and maps as http.ts maps those (a 429
 * that cools the deployment, a 400 the client's and not retried), where every exception was a
 * 502. Once the answer has started, a failure ends the stream as before. */
function exceptionError(t: RouteTarget, type: string, body: any, started: boolean) {
  const msg = upstreamText(String(body?.message ?? ""), 500);
  if (!started && /^throttlingexception$/i.test(type)) return upstreamError("rate_limited", "rate_limit_exceeded", `provider ${t.provider} rate limited the request: ${msg}`);
  if (!started && /^validationexception$/i.test(type)) return upstreamError("invalid", "invalid_request", `provider ${t.provider} refused the request: ${msg}`);
  return upstreamError("upstream", "upstream_error", `provider ${t.provider} failed mid-stream: ${type}: ${msg}`);
}

export async function* converseStreamEvents(t: RouteTarget, req: ChatRequest, res: Dispatcher.ResponseData, cancel?: Cancellation): AsyncGenerator<ChatEvent> {
  let calls = 0;
  let chars = 0;
  let stop: unknown;
  let usage: any;
  const toolIndex = new Map<number, number>(); // contentBlockIndex -> tool call index
  for await (const f of frames(t, res, cancel)) {
    if (f.messageType !== "event") throw exceptionError(t, f.type, f.body, calls > 0 || chars > 0);
    const b = f.body;
    switch (f.type) {
      case "contentBlockStart": {
        const tu = b.start?.toolUse;
        if (tu) {
          const i = calls++;
          toolIndex.set(b.contentBlockIndex ?? i, i);
          yield { type: "tool_call_start", index: i, id: String(tu.toolUseId ?? `call_${i}`), name: String(tu.name ?? "") };
        }
        break;
      }
      case "contentBlockDelta": {
        const d = b.delta ?? {};
        if (typeof d.text === "string" && d.text) {
          chars += d.text.length;
          yield { type: "text", text: d.text };
        } else if (d.toolUse && typeof d.toolUse.input === "string" && toolIndex.has(b.contentBlockIndex)) {
          chars += d.toolUse.input.length;
          yield { type: "tool_call_delta", index: toolIndex.get(b.contentBlockIndex)!, argumentsDelta: d.toolUse.input };
        }
        break;
      }
      case "messageStop":
        stop = b.stopReason;
        break;
      case "metadata":
        usage = b.usage;
        break;
    }
  }
  yield {
    type: "done",
    finishReason: finishOf(stop, calls),
    usage: { promptTokens: usage?.inputTokens ?? estimateTokens(req), completionTokens: usage?.outputTokens ?? Math.ceil(chars / 4) },
  };
}
