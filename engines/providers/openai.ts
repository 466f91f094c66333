// OpenAI-compatible upstream (type openai, and ollama through its /v1 API): the internal
// ChatRequest to /chat/completions and back to ChatEvents. Streaming requests go upstream with
// `stream: true` and `stream_options.include_usage` so usage is counted; non-streaming requests
// go upstream non-streaming (one JSON body).
import type { ChatEvent, ChatMessage, ChatRequest, EmbeddingRequest, EmbeddingResult, FinishReason } from "../chat/types";
import { SvcError } from "../errors";
import { postForJson, postForJsonText, postJson, readJsonBody, sseMessages, upstreamError, upstreamText } from "./http";
import { primed, type ProviderAdapter, type RouteTarget } from "./types";
import { estimateTokens } from "./estimate";
import { syncEvents, type UpstreamAnswer } from "../chat/collect";
import { dataUrl, partsOf, refuseImageUrls, toolImagesAsUserTurn } from "../chat/images";
import type { Cancellation } from "../chat/cancel";

/** A message with images: OpenAI's content parts (text, image_url with an http(s) or data: URL). */
function openAIParts(m: ChatMessage): Array<Record<string, unknown>> {
  return partsOf(m).map((p) =>
    p.type === "text" ? { type: "text", text: p.text } : { type: "image_url", image_url: { url: p.image.type === "url" ? p.image.url : dataUrl(p.image), ...(p.detail ? { detail: p.detail } : {}) } },
  );
}

/** The messages as this upstream takes them. OpenAI's Chat Completions API takes text only in a
 * tool message (ChatCompletionToolMessageParam.content: a string or text parts), so for type
 * openai (and Azure, which shares this body) a tool result's images move to a user message right
 * after the tool messages. Ollama's OpenAI-compatible API turns image_url parts of any message,
 * a tool message included, into that message's `images`, so for type ollama they stay put. */
function upstreamMessages(t: RouteTarget, msgs: ChatMessage[]): ChatMessage[] {
  return t.type === "ollama" ? msgs : toolImagesAsUserTurn(msgs);
}

function toOpenAIMessage(m: ChatMessage): Record<string, unknown> {
  const o: Record<string, unknown> = { role: m.role, content: m.parts ? openAIParts(m) : m.content };
  if (m.toolCalls?.length) {
    o.tool_calls = m.toolCalls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } }));
    if (!m.content) o.content = null;
  }
  if (m.toolCallId) o.tool_call_id = m.toolCallId;
  if (m.name) o.name = m.name;
  return o;
}

export function toOpenAIBody(t: RouteTarget, req: ChatRequest): Record<string, unknown> {
  // Ollama's OpenAI-compatible API takes images as base64 data: URLs only
  if (t.type === "ollama") refuseImageUrls(req, req.model, `provider ${t.provider}, type ollama`);
  const body: Record<string, unknown> = {
    model: t.upstreamModel,
    messages: req.prompt !== undefined && req.messages.length === 0 ? [{ role: "user", content: req.prompt }] : upstreamMessages(t, req.messages).map(toOpenAIMessage),
  };
  if (req.stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  // under the client's own name for it: OpenAI's reasoning models refuse max_tokens (400), older
  // OpenAI-compatible servers know only max_tokens (Ollama's among them)
  if (req.maxTokens !== undefined) body[req.maxTokensField && t.type !== "ollama" ? req.maxTokensField : "max_tokens"] = req.maxTokens;
  const s = req.sampling;
  if (s.temperature !== undefined) body.temperature = s.temperature;
  if (s.topP !== undefined) body.top_p = s.topP;
  if (s.seed !== undefined) body.seed = s.seed;
  if (s.stop?.length) body.stop = s.stop;
  if (t.type === "ollama") {
    if (s.topK !== undefined) body.top_k = s.topK;
    if (s.repeatPenalty !== undefined) body.repeat_penalty = s.repeatPenalty;
  }
  if (req.tools?.length) {
    body.tools = req.tools.map((x) => ({ type: "function", function: { name: x.name, description: x.description, parameters: x.parameters ?? { type: "object", properties: {} } } }));
  }
  if (req.toolChoice !== undefined) {
    body.tool_choice = typeof req.toolChoice === "string" ? req.toolChoice : { type: "function", function: { name: req.toolChoice.name } };
  }
  if (req.responseSchema) body.response_format = { type: "json_schema", json_schema: { name: "response", schema: req.responseSchema } };
  return body;
}

function finish(r: unknown, hadTools: boolean): FinishReason {
  if (r === "length") return "length";
  // An answer with tool calls is "tool_calls" whatever else the upstream says: OpenAI (and vLLM)
  // answer a forced named tool_choice with finish_reason "stop", Gemini's OpenAI-compatible API
  // ends calls with "stop" too. Kept as "stop", an Anthropic client saw stop_reason "end_turn"
  // beside its tool_use blocks (and its agent loop ended); every other adapter here (local,
  // Anthropic, Bedrock, Gemini) already reports calls as tool_calls.
  if (r === "tool_calls" || r === "function_call" || hadTools) return "tool_calls";
  return "stop";
}

export function authHeaders(t: RouteTarget): Record<string, string> {
  const h: Record<string, string> = { ...(t.headers ?? {}) };
  if (t.credential) h.authorization = `Bearer ${t.credential}`;
  return h;
}

export function* eventsOfResponse(t: RouteTarget, req: ChatRequest, j: any): Generator<ChatEvent> {
  const choice = j?.choices?.[0];
  if (!choice) throw new SvcError("upstream", "upstream_error", `provider ${t.provider} sent no choices`);
  const msg = choice.message ?? {};
  const text = typeof msg.content === "string" ? msg.content : "";
  if (text) yield { type: "text", text };
  const calls: any[] = Array.isArray(msg.tool_calls) ? msg.tool_calls : [];
  for (let i = 0; i < calls.length; i++) {
    const c = calls[i];
    yield { type: "tool_call_start", index: i, id: c.id ?? `call_${i}`, name: c.function?.name ?? "" };
    if (c.function?.arguments) yield { type: "tool_call_delta", index: i, argumentsDelta: String(c.function.arguments) };
  }
  const u = j.usage;
  yield {
    type: "done",
    finishReason: finish(choice.finish_reason, calls.length > 0),
    usage: {
      promptTokens: u?.prompt_tokens ?? estimateTokens(req),
      completionTokens: u?.completion_tokens ?? Math.ceil(text.length / 4),
    },
  };
}

export async function* streamEvents(t: RouteTarget, req: ChatRequest, messages: AsyncGenerator<{ event?: string; data: string }>): AsyncGenerator<ChatEvent> {
  let finishReason: unknown = null;
  let usage: any = null;
  let chars = 0;
  // upstream tool call index -> our index
  const seen = new Map<number, number>();
  // Some OpenAI-compatible servers (Gemini's OpenAI API among them) leave `index` out of their
  // tool call deltas and send parallel calls one per chunk, each with its own id: read as index 0
  // they were merged into one call with the first id and the arguments of all of them run
  // together. Without an index, a new id opens a new call and a delta with no id continues the
  // last one opened.
  const byId = new Map<string, number>();
  let calls = 0;
  let lastCall = -1;
  let ended = false;
  for await (const m of messages) {
    if (m.data === "[DONE]") {
      ended = true;
      break;
    }
    let j: any;
    try {
      j = JSON.parse(m.data);
    } catch {
      continue;
    }
    if (j.error) throw upstreamError("upstream", "upstream_error", `provider ${t.provider} failed mid-stream: ${upstreamText(String(j.error.message ?? JSON.stringify(j.error)), 500)}`);
    if (j.usage) usage = j.usage;
    const ch = j.choices?.[0];
    if (!ch) continue;
    const d = ch.delta ?? {};
    if (typeof d.content === "string" && d.content) {
      chars += d.content.length;
      yield { type: "text", text: d.content };
    }
    if (Array.isArray(d.tool_calls)) {
      for (const tc of d.tool_calls) {
        const hasIndex = typeof tc.index === "number";
        const id = typeof tc.id === "string" && tc.id ? tc.id : undefined;
        let idx = hasIndex ? seen.get(tc.index) : id !== undefined ? byId.get(id) : lastCall >= 0 ? lastCall : undefined;
        if (idx === undefined) {
          idx = calls++;
          if (hasIndex) seen.set(tc.index, idx);
          if (id !== undefined) byId.set(id, idx);
          yield { type: "tool_call_start", index: idx, id: id ?? `call_${idx}`, name: tc.function?.name ?? "" };
        }
        lastCall = idx;
        if (tc.function?.arguments) {
          chars += tc.function.arguments.length;
          yield { type: "tool_call_delta", index: idx, argumentsDelta: tc.function.arguments };
        }
      }
    }
    if (ch.finish_reason) finishReason = ch.finish_reason;
  }
  // A body that ends with neither a finish_reason nor [DONE] is an answer cut short (the upstream,
  // or a proxy before it, gave up and closed the response cleanly): a failure, as a broken
  // connection is, not a complete answer the client (and the response cache) would take as one.
  if (!ended && finishReason == null) throw upstreamError("upstream", "upstream_error", `provider ${t.provider} ended its stream before the answer did (no finish_reason, no [DONE])`);
  yield {
    type: "done",
    finishReason: finish(finishReason, calls > 0),
    usage: {
      promptTokens: usage?.prompt_tokens ?? estimateTokens(req),
      completionTokens: usage?.completion_tokens ?? Math.ceil(chars / 4),
    },
  };
}

/** The upstream's chat.completion when it is already in the form svc writes (one assistant
 * choice, a finish reason svc would not change, content and tool calls whole, usage counted), so
 * an OpenAI route may send it unchanged; anything else is rewritten from the events. */
function passable(j: any, text: string): UpstreamAnswer | undefined {
  if (j?.object !== "chat.completion" || typeof j.model !== "string" || typeof j.id !== "string") return undefined;
  const u = j.usage;
  if (typeof u?.prompt_tokens !== "number" || typeof u.completion_tokens !== "number") return undefined;
  if (!Array.isArray(j.choices) || j.choices.length !== 1) return undefined;
  const c = j.choices[0];
  const m = c?.message;
  if (m?.role !== "assistant") return undefined;
  const calls = m.tool_calls;
  if (calls !== undefined && calls !== null && (!Array.isArray(calls) || calls.length === 0 || !calls.every(wholeCall))) return undefined;
  const hasCalls = Array.isArray(calls);
  if (c.finish_reason !== finish(c.finish_reason, hasCalls)) return undefined;
  if (hasCalls ? !(m.content === null || (typeof m.content === "string" && m.content !== "")) : typeof m.content !== "string") return undefined;
  return { text, model: j.model };
}

const wholeCall = (c: any) => typeof c?.id === "string" && c.type === "function" && typeof c.function?.name === "string" && typeof c.function.arguments === "string";

export const openaiAdapter: ProviderAdapter = {
  async chat(t, req, cancel) {
    if (!req.stream) {
      const { json, text } = await postForJsonText(t.provider, t.baseUrl!, "/chat/completions", authHeaders(t), toOpenAIBody(t, req), t.timeoutMs, cancel);
      return syncEvents(eventsOfResponse(t, req, json), passable(json, text));
    }
    const res = await postJson(t.provider, t.baseUrl!, "/chat/completions", authHeaders(t), toOpenAIBody(t, req), t.timeoutMs, cancel);
    const ct = String(res.headers["content-type"] ?? "");
    if (!ct.includes("text/event-stream")) {
      // some servers ignore stream:true and answer JSON
      const j = await readJsonBody(t.provider, res, t.timeoutMs, cancel);
      return syncEvents(eventsOfResponse(t, req, j));
    }
    return primed(streamEvents(t, req, sseMessages(t.provider, res, t.timeoutMs, cancel)));
  },

  async embed(t: RouteTarget, req: EmbeddingRequest, cancel?: Cancellation): Promise<EmbeddingResult> {
    const j = await postForJson(t.provider, t.baseUrl!, "/embeddings", authHeaders(t), { model: t.upstreamModel, input: req.input }, t.timeoutMs, cancel);
    const data: any[] = Array.isArray(j?.data) ? j.data : [];
    data.sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
    return {
      vectors: data.map((d) => d.embedding as number[]),
      promptTokens: j?.usage?.prompt_tokens ?? req.input.reduce((n, s) => n + Math.ceil(s.length / 4), 0),
    };
  },
};
