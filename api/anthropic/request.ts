// Request transform: Anthropic Messages body -> internal ChatRequest. System text (string or
// blocks), text / tool_use / tool_result blocks, tools with input_schema, tool_choice
// auto | any | tool | none, stop_sequences, temperature (0..1 here, as Anthropic defines it).
import type { ChatMessage, ChatRequest, ContentPart, ImageSource, ToolCall, ToolChoice, ToolDef } from "../../engines/chat/types";
import { imageFromBase64, imageFromUrl, messageOfParts } from "../../engines/chat/images";
import {
  argsToJson, bad, checkToolChoice, checkUniqueTools, isObj, optBool, optObject, present, reqString, stopList, toolDef,
} from "../openai/validate";

function blocksText(v: unknown, param: string): string {
  if (typeof v === "string") return v;
  if (!Array.isArray(v)) throw bad(`'${param}' must be a string or an array of text blocks`, param);
  return v
    .map((b, i) => {
      if (!isObj(b) || b.type !== "text" || typeof b.text !== "string") {
        throw bad(`'${param}[${i}]' must be a text block {type: "text", text}`, `${param}[${i}]`);
      }
      return b.text;
    })
    .join("\n");
}

/** An image block's source: {type: "base64", media_type, data} or {type: "url", url}. */
function imageBlock(src: unknown, param: string): ImageSource {
  if (!isObj(src)) throw bad(`'${param}' must be {type: "base64", media_type, data} or {type: "url", url}`, param);
  if (src.type === "base64") {
    if (typeof src.media_type !== "string") throw bad(`'${param}.media_type' must be a string`, `${param}.media_type`);
    return imageFromBase64(src.data, src.media_type, `${param}.data`);
  }
  if (src.type === "url") return imageFromUrl(src.url, `${param}.url`);
  throw bad(`'${param}.type' must be "base64" or "url"`, `${param}.type`);
}

/** A tool_result block: its content a string, or text and image blocks. */
function toolResult(b: Record<string, any>, q: string): ChatMessage {
  const c = b.content;
  if (c !== undefined && typeof c !== "string" && !Array.isArray(c)) throw bad(`'${q}.content' must be a string or an array of text and image blocks`, `${q}.content`);
  const parts: ContentPart[] = typeof c === "string" ? [{ type: "text", text: c }] : (c ?? []).map((x: unknown, k: number): ContentPart => {
    const r = `${q}.content[${k}]`;
    if (isObj(x) && x.type === "image") return { type: "image", image: imageBlock(x.source, `${r}.source`) };
    if (!isObj(x) || x.type !== "text" || typeof x.text !== "string") throw bad(`'${r}' must be a text block {type: "text", text} or an image block`, r);
    return { type: "text", text: x.text };
  });
  if (b.is_error === true) {
    const i = parts.findIndex((p) => p.type === "text");
    if (i >= 0) parts[i] = { type: "text", text: `Error: ${(parts[i] as { text: string }).text}` };
    else parts.unshift({ type: "text", text: "Error: " });
  }
  return messageOfParts("tool", parts, { toolCallId: reqString(b.tool_use_id, `${q}.tool_use_id`) });
}

function parseMessage(m: unknown, i: number): ChatMessage[] {
  const p = `messages[${i}]`;
  if (!isObj(m)) throw bad(`'${p}' must be an object with role and content`, p);
  if (m.role !== "user" && m.role !== "assistant") throw bad(`'${p}.role' must be "user" or "assistant"`, `${p}.role`);
  if (typeof m.content === "string") return [{ role: m.role, content: m.content }];
  if (!Array.isArray(m.content)) throw bad(`'${p}.content' must be a string or an array of content blocks`, `${p}.content`);
  const text: string[] = [];
  // the user's text and images in order (images: user messages only)
  const parts: ContentPart[] = [];
  const calls: ToolCall[] = [];
  const results: ChatMessage[] = [];
  m.content.forEach((b: unknown, j: number) => {
    const q = `${p}.content[${j}]`;
    if (!isObj(b)) throw bad(`'${q}' must be a content block`, q);
    switch (b.type) {
      case "text":
        if (typeof b.text !== "string") throw bad(`'${q}.text' must be a string`, `${q}.text`);
        text.push(b.text);
        parts.push({ type: "text", text: b.text });
        break;
      case "image":
        if (m.role !== "user") throw bad(`'${q}': image blocks belong to user messages`, q);
        parts.push({ type: "image", image: imageBlock(b.source, `${q}.source`) });
        break;
      case "tool_use":
        if (m.role !== "assistant") throw bad(`'${q}': tool_use blocks belong to assistant messages`, q);
        calls.push({ id: reqString(b.id, `${q}.id`), name: reqString(b.name, `${q}.name`), arguments: argsToJson(b.input, `${q}.input`) });
        break;
      case "tool_result": {
        if (m.role !== "user") throw bad(`'${q}': tool_result blocks belong to user messages`, q);
        results.push(toolResult(b, q));
        break;
      }
      case "thinking":
      case "redacted_thinking":
        break; // another model's reasoning: nothing the local model can use
      default:
        throw bad(`content block type '${String(b.type)}' is not supported; text, image, tool_use and tool_result are`, `${q}.type`);
    }
  });
  if (m.role === "assistant") return [{ role: "assistant", content: text.join("\n"), ...(calls.length ? { toolCalls: calls } : {}) }];
  // tool results answer the previous assistant turn, so they come before any new user text
  return [...results, ...(parts.length || !results.length ? [messageOfParts("user", parts)] : [])];
}

function parseTools(v: unknown): ToolDef[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw bad("'tools' must be an array", "tools");
  const tools = v.map((t, i) => {
    const p = `tools[${i}]`;
    if (!isObj(t)) throw bad(`'${p}' must be a tool object`, p);
    if (t.type !== undefined && t.type !== null && t.type !== "custom") {
      throw bad(`tool type '${String(t.type)}' is not available here; only client tools with input_schema are`, `${p}.type`);
    }
    if (!isObj(t.input_schema)) throw bad(`'${p}.input_schema' must be a JSON Schema object`, `${p}.input_schema`);
    return toolDef(t.name, t.description, t.input_schema, p);
  });
  checkUniqueTools(tools, "tools");
  return tools.length ? tools : undefined;
}

function parseToolChoice(v: unknown, tools: ToolDef[] | undefined): ToolChoice | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isObj(v)) throw bad("'tool_choice' must be an object {type: auto | any | tool | none}", "tool_choice");
  optBool(v.disable_parallel_tool_use, "tool_choice.disable_parallel_tool_use");
  let tc: ToolChoice;
  switch (v.type) {
    case "auto":
      tc = "auto";
      break;
    case "any":
      tc = "required";
      break;
    case "none":
      tc = "none";
      break;
    case "tool":
      tc = { name: reqString(v.name, "tool_choice.name") };
      break;
    default:
      throw bad("'tool_choice.type' must be auto, any, tool or none", "tool_choice.type");
  }
  checkToolChoice(tools, tc, "tool_choice");
  return tc;
}

/** output_config.format {type: "json_schema", schema}: structured output. */
function parseOutputFormat(v: unknown): Record<string, unknown> | undefined {
  const oc = (v ?? undefined) as Record<string, any> | undefined; // an object: the body schema's
  const f = optObject(oc?.format, "output_config.format");
  if (!f) return undefined;
  if (f.type !== "json_schema" || !isObj(f.schema)) {
    throw bad("'output_config.format' must be {type: \"json_schema\", schema: {…}}", "output_config.format");
  }
  return f.schema;
}

export function parseMessagesRequest(b: Record<string, any>, agentId?: string): ChatRequest {
  // model, max_tokens, a non-empty messages list and the sampling ranges are the body schema's
  const model: string = b.model;
  const maxTokens: number = b.max_tokens;
  const messages: ChatMessage[] = [];
  if (b.system !== undefined && b.system !== null) {
    const sys = blocksText(b.system, "system");
    if (sys) messages.push({ role: "system", content: sys });
  }
  b.messages.forEach((m: unknown, i: number) => messages.push(...parseMessage(m, i)));
  const tools = parseTools(b.tools);
  const toolChoice = parseToolChoice(b.tool_choice, tools);
  const sampling = present({ temperature: b.temperature, topP: b.top_p, topK: b.top_k, seed: b.seed, stop: stopList(b.stop_sequences) });
  const metadata: Record<string, unknown> | undefined = b.metadata ?? undefined;
  // `thinking` is accepted and ignored: local models answer directly (clients that ask for
  // thinking still get a normal answer rather than an error)
  const responseSchema = parseOutputFormat(b.output_config);
  return {
    model,
    messages,
    maxTokens,
    sampling,
    ...(tools ? { tools } : {}),
    ...(toolChoice !== undefined ? { toolChoice } : {}),
    ...(responseSchema ? { responseSchema } : {}),
    stream: b.stream ?? false,
    ...(metadata ? { metadata } : {}),
    ...(agentId ? { agentId } : {}),
  };
}

/** /v1/messages/count_tokens: the Messages body without max_tokens (and never streamed). */
export function parseCountTokensRequest(b: Record<string, any>): ChatRequest {
  const { max_tokens: _max, stream: _stream, ...rest } = b;
  return parseMessagesRequest({ ...rest, max_tokens: 1 });
}
