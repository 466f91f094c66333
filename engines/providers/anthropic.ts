// Anthropic Messages upstream (type anthropic): POST {baseUrl}/v1/messages with x-api-key and
// anthropic-version. System messages become `system`; tool calls/results become tool_use /
// tool_result blocks. max_tokens is required by the API: when the caller set none, 4096.
import type { ChatEvent, ChatMessage, ChatRequest, FinishReason, ImageSource } from "../chat/types";
import { SvcError } from "../errors";
import { postForJson, postJson, readJsonBody, sseMessages, upstreamError, upstreamText } from "./http";
import { primed, type ProviderAdapter, type RouteTarget } from "./types";
import { estimateTokens } from "./estimate";

export const ANTHROPIC_DEFAULT_MAX_TOKENS = 4096;

/** An image as Anthropic's source: base64 bytes with media_type, or a URL Anthropic fetches. */
const anthropicSource = (i: ImageSource) => (i.type === "url" ? { type: "url", url: i.url } : { type: "base64", media_type: i.mediaType, data: i.data });

function toBlocks(msgs: ChatMessage[]): { system?: string; messages: any[] } {
  const system: string[] = [];
  const out: any[] = [];
  const push = (role: "user" | "assistant", block: any) => {
    const last = out[out.length - 1];
    if (last && last.role === role) last.content.push(block);
    else out.push({ role, content: [block] });
  };
  for (const m of msgs) {
    if (m.role === "system") {
      system.push(m.content);
    } else if (m.role === "tool") {
      // a tool_result's content may be text and image blocks
      const content = m.parts ? m.parts.map((p) => (p.type === "text" ? { type: "text", text: p.text } : { type: "image", source: anthropicSource(p.image) })) : m.content;
      push("user", { type: "tool_result", tool_use_id: m.toolCallId ?? "", content });
    } else if (m.role === "assistant") {
      if (m.content) push("assistant", { type: "text", text: m.content });
      for (const c of m.toolCalls ?? []) {
        let input: unknown = {};
        try {
          input = c.arguments ? JSON.parse(c.arguments) : {};
        } catch {
          input = {};
        }
        push("assistant", { type: "tool_use", id: c.id, name: c.name, input });
      }
    } else if (m.parts) {
      for (const p of m.parts) push("user", p.type === "text" ? { type: "text", text: p.text } : { type: "image", source: anthropicSource(p.image) });
    } else {
      push("user", { type: "text", text: m.content });
    }
  }
  return { system: system.length ? system.join("\n\n") : undefined, messages: out };
}

export function toAnthropicBody(t: RouteTarget, req: ChatRequest): Record<string, unknown> {
  const msgs = req.prompt !== undefined && req.messages.length === 0 ? [{ role: "user" as const, content: req.prompt }] : req.messages;
  const { system, messages } = toBlocks(msgs);
  const body: Record<string, unknown> = { model: t.upstreamModel, max_tokens: req.maxTokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS, messages };
  if (system) body.system = system;
  if (req.stream) body.stream = true;
  const s = req.sampling;
  if (s.temperature !== undefined) body.temperature = Math.min(1, s.temperature);
  if (s.topP !== undefined) body.top_p = s.topP;
  if (s.topK !== undefined) body.top_k = s.topK;
  if (s.stop?.length) body.stop_sequences = s.stop;
  if (req.tools?.length) {
    body.tools = req.tools.map((x) => ({ name: x.name, description: x.description, input_schema: x.parameters ?? { type: "object", properties: {} } }));
    const tc = req.toolChoice;
    if (tc === "required") body.tool_choice = { type: "any" };
    else if (tc === "auto") body.tool_choice = { type: "auto" };
    else if (tc === "none") body.tool_choice = { type: "none" };
    else if (tc && typeof tc === "object") body.tool_choice = { type: "tool", name: tc.name };
  }
  // structured output: Anthropic's output_config.format (a client's response_format json_schema,
  // or its own output_config, was dropped here and the answer came back as free text)
  if (req.responseSchema) body.output_config = { format: { type: "json_schema", schema: req.responseSchema } };
  return body;
}

/** The upstream's matched stop sequence, carried on the done event. */
const stopSequenceOf = (reason: unknown, seq: unknown) => (reason === "stop_sequence" && typeof seq === "string" ? { stopSequence: seq } : {});

const finish = (r: unknown): FinishReason => (r === "max_tokens" ? "length" : r === "tool_use" ? "tool_calls" : "stop");

function headers(t: RouteTarget): Record<string, string> {
  const h: Record<string, string> = { "anthropic-version": "2023-06-01", ...(t.headers ?? {}) };
  if (t.credential) h["x-api-key"] = t.credential;
  return h;
}

const messagesPath = (base: string) => (/\/v1\/?$/.test(base) ? "/messages" : "/v1/messages");

async function* fromJson(t: RouteTarget, req: ChatRequest, j: any): AsyncGenerator<ChatEvent> {
  if (!Array.isArray(j?.content)) throw new SvcError("upstream", "upstream_error", `provider ${t.provider} sent no content`);
  let idx = 0;
  let chars = 0;
  for (const b of j.content) {
    if (b.type === "text" && b.text) {
      chars += b.text.length;
      yield { type: "text", text: b.text };
    } else if (b.type === "tool_use") {
      const i = idx++;
      yield { type: "tool_call_start", index: i, id: b.id, name: b.name };
      yield { type: "tool_call_delta", index: i, argumentsDelta: JSON.stringify(b.input ?? {}) };
    }
  }
  yield {
    type: "done",
    finishReason: finish(j.stop_reason),
    usage: { promptTokens: j.usage?.input_tokens ?? estimateTokens(req), completionTokens: j.usage?.output_tokens ?? Math.ceil(chars / 4) },
    ...stopSequenceOf(j.stop_reason, j.stop_sequence),
  };
}

/** An `error` event as svc's error. Anthropic may answer 200 and then send the error as the
 * stream's first event: before anything reached the caller, a rate_limit_error is the same as a
 * 429 and an invalid_request_error / request_too_large the same as a 400 (mapped as http.ts maps
 * those statuses), where every error event was a 502. Once the answer has started, an error ends
 * the stream as before. */
function streamError(t: RouteTarget, e: any, started: boolean) {
  const msg = upstreamText(String(e?.message ?? "error"), 500);
  if (!started && e?.type === "rate_limit_error") return upstreamError("rate_limited", "rate_limit_exceeded", `provider ${t.provider} rate limited the request: ${msg}`);
  if (!started && (e?.type === "invalid_request_error" || e?.type === "request_too_large")) return upstreamError("invalid", "invalid_request", `provider ${t.provider} refused the request: ${msg}`);
  return upstreamError("upstream", "upstream_error", `provider ${t.provider} failed mid-stream: ${msg}`);
}

async function* fromStream(t: RouteTarget, req: ChatRequest, msgs: AsyncGenerator<{ event?: string; data: string }>): AsyncGenerator<ChatEvent> {
  let input: number | undefined;
  let output: number | undefined;
  let stop: unknown = null;
  let stopSeq: unknown = null;
  let chars = 0;
  const toolIndex = new Map<number, number>(); // content block index -> tool call index
  // tool blocks whose input has not streamed yet (content block index -> the block's own input).
  // A tool without parameters streams one input_json_delta with partial_json "" (or none): its
  // arguments were then "" where the non-streaming answer (and every other adapter) gives "{}",
  // and an OpenAI client's JSON.parse of them failed. At content_block_stop such a call gets the
  // block's start input ({} for Anthropic itself).
  const unstreamed = new Map<number, unknown>();
  for await (const m of msgs) {
    let j: any;
    try {
      j = JSON.parse(m.data);
    } catch {
      continue;
    }
    switch (j.type) {
      case "message_start":
        input = j.message?.usage?.input_tokens;
        output = j.message?.usage?.output_tokens;
        break;
      case "content_block_start":
        if (j.content_block?.type === "tool_use") {
          const i = toolIndex.size;
          toolIndex.set(j.index, i);
          unstreamed.set(j.index, j.content_block.input ?? {});
          yield { type: "tool_call_start", index: i, id: j.content_block.id, name: j.content_block.name };
        } else if (j.content_block?.type === "text" && j.content_block.text) {
          chars += j.content_block.text.length;
          yield { type: "text", text: j.content_block.text };
        }
        break;
      case "content_block_delta":
        if (j.delta?.type === "text_delta" && j.delta.text) {
          chars += j.delta.text.length;
          yield { type: "text", text: j.delta.text };
        } else if (j.delta?.type === "input_json_delta" && toolIndex.has(j.index) && j.delta.partial_json) {
          unstreamed.delete(j.index);
          yield { type: "tool_call_delta", index: toolIndex.get(j.index)!, argumentsDelta: j.delta.partial_json };
        }
        break;
      case "content_block_stop":
        if (unstreamed.has(j.index)) {
          yield { type: "tool_call_delta", index: toolIndex.get(j.index)!, argumentsDelta: JSON.stringify(unstreamed.get(j.index)) };
          unstreamed.delete(j.index);
        }
        break;
      case "message_delta":
        if (j.delta?.stop_reason) stop = j.delta.stop_reason;
        if (typeof j.delta?.stop_sequence === "string") stopSeq = j.delta.stop_sequence;
        // numbers only: MessageDeltaUsage's counts are nullable (`input_tokens: null` is "not
        // counted here"), and a null must not replace message_start's count with an estimate
        if (typeof j.usage?.output_tokens === "number") output = j.usage.output_tokens;
        if (typeof j.usage?.input_tokens === "number") input = j.usage.input_tokens;
        break;
      case "error":
        throw streamError(t, j.error, chars > 0 || toolIndex.size > 0);
      case "message_stop":
        break;
    }
    if (j.type === "message_stop") break;
  }
  yield {
    type: "done",
    finishReason: finish(stop),
    usage: { promptTokens: input ?? estimateTokens(req), completionTokens: output ?? Math.ceil(chars / 4) },
    ...stopSequenceOf(stop, stopSeq),
  };
}

export const anthropicAdapter: ProviderAdapter = {
  async chat(t, req, cancel) {
    if (!req.stream) return fromJson(t, req, await postForJson(t.provider, t.baseUrl!, messagesPath(t.baseUrl!), headers(t), toAnthropicBody(t, req), t.timeoutMs, cancel));
    const res = await postJson(t.provider, t.baseUrl!, messagesPath(t.baseUrl!), headers(t), toAnthropicBody(t, req), t.timeoutMs, cancel);
    const ct = String(res.headers["content-type"] ?? "");
    if (!ct.includes("text/event-stream")) {
      return fromJson(t, req, await readJsonBody(t.provider, res, t.timeoutMs, cancel));
    }
    return primed(fromStream(t, req, sseMessages(t.provider, res, t.timeoutMs, cancel)));
  },
};
