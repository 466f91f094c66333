// Request transform: OpenAI Chat Completions body -> internal ChatRequest (validated).
import type { ChatMessage, ChatRequest, SamplingOverrides, ToolCall, ToolChoice, ToolDef } from "../../engines/chat/types";
import {
  bad, checkToolChoice, checkUniqueTools, isObj, optString, present, reqString, stopList, toolDef,
} from "./validate";
import { messageWithImages } from "./content";

export interface OpenAIChatParsed {
  req: ChatRequest;
  /** stream_options.include_usage */
  includeUsage: boolean;
}

/** Text of a content field: a string, or an array of text parts (joined). Images are taken only
 * in user and tool messages (content.ts); audio is refused. */
export function textContent(v: unknown, param: string, allowNull = false): string {
  if (typeof v === "string") return v;
  if ((v === null || v === undefined) && allowNull) return "";
  if (!Array.isArray(v)) throw bad(`'${param}' must be a string or an array of content parts`, param);
  const parts: string[] = [];
  v.forEach((p, i) => {
    if (!isObj(p)) throw bad(`'${param}[${i}]' must be a content part object`, `${param}[${i}]`);
    if (p.type === "text" || p.type === "input_text" || p.type === "output_text") {
      if (typeof p.text !== "string") throw bad(`'${param}[${i}].text' must be a string`, `${param}[${i}].text`);
      parts.push(p.text);
    } else if (p.type === "refusal" && typeof p.refusal === "string") {
      parts.push(p.refusal);
    } else {
      throw bad(`content part type '${String(p.type)}' is not supported; only text parts are`, `${param}[${i}].type`);
    }
  });
  return parts.join("\n");
}

function toolCalls(v: unknown, param: string): ToolCall[] {
  if (!Array.isArray(v)) throw bad(`'${param}' must be an array`, param);
  return v.map((c, i) => {
    const p = `${param}[${i}]`;
    if (!isObj(c) || !isObj(c.function)) throw bad(`'${p}' must be {id, type: "function", function: {name, arguments}}`, p);
    if (c.type !== undefined && c.type !== "function") throw bad(`'${p}.type' must be "function"`, `${p}.type`);
    const name = reqString(c.function.name, `${p}.function.name`);
    const args = c.function.arguments;
    if (args !== undefined && typeof args !== "string") throw bad(`'${p}.function.arguments' must be a JSON string`, `${p}.function.arguments`);
    return { id: typeof c.id === "string" ? c.id : `call_${i}`, name, arguments: args ?? "{}" };
  });
}

const ROLES = new Set(["system", "developer", "user", "assistant", "tool"]);

export function parseMessages(v: unknown): ChatMessage[] {
  if (!Array.isArray(v) || v.length === 0) throw bad("'messages' must be a non-empty array", "messages");
  return v.map((m, i): ChatMessage => {
    const p = `messages[${i}]`;
    if (!isObj(m)) throw bad(`'${p}' must be an object with role and content`, p);
    if (typeof m.role !== "string" || !ROLES.has(m.role)) {
      throw bad(`'${p}.role' must be one of system, developer, user, assistant, tool`, `${p}.role`);
    }
    const name = optString(m.name, `${p}.name`);
    switch (m.role) {
      case "system":
      case "developer":
        return { role: "system", content: textContent(m.content, `${p}.content`), ...(name ? { name } : {}) };
      case "user":
        return messageWithImages("user", m.content, `${p}.content`, name ? { name } : {});
      case "assistant": {
        const calls = m.tool_calls === undefined || m.tool_calls === null ? [] : toolCalls(m.tool_calls, `${p}.tool_calls`);
        const content = textContent(m.content, `${p}.content`, calls.length > 0 || m.content === null);
        return { role: "assistant", content, ...(calls.length ? { toolCalls: calls } : {}), ...(name ? { name } : {}) };
      }
      default: {
        const id = reqString(m.tool_call_id, `${p}.tool_call_id`);
        // text, or text and image parts (each provider puts the images where its vendor takes them)
        return messageWithImages("tool", m.content, `${p}.content`, { toolCallId: id });
      }
    }
  });
}

export function parseTools(v: unknown): ToolDef[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw bad("'tools' must be an array", "tools");
  const tools = v.map((t, i) => {
    const p = `tools[${i}]`;
    if (!isObj(t) || t.type !== "function" || !isObj(t.function)) {
      throw bad(`'${p}' must be {type: "function", function: {name, description?, parameters?}}`, p);
    }
    return toolDef(t.function.name, t.function.description, t.function.parameters, `${p}.function`);
  });
  checkUniqueTools(tools, "tools");
  return tools.length ? tools : undefined;
}

export function parseToolChoice(v: unknown, tools: ToolDef[] | undefined, param = "tool_choice"): ToolChoice | undefined {
  if (v === undefined || v === null) return undefined;
  let tc: ToolChoice;
  if (v === "none" || v === "auto" || v === "required") tc = v;
  else if (isObj(v) && v.type === "function" && isObj(v.function) && typeof v.function.name === "string") tc = { name: v.function.name };
  // the Responses API's flat form {type: "function", name}
  else if (isObj(v) && v.type === "function" && typeof v.name === "string") tc = { name: v.name };
  else throw bad(`'${param}' must be "none", "auto", "required" or {type: "function", function: {name}}`, param);
  checkToolChoice(tools, tc, param);
  return tc;
}

/** response_format: text | json_object | json_schema -> a JSON Schema the output must satisfy. */
export function parseResponseFormat(v: unknown, param = "response_format"): Record<string, unknown> | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isObj(v)) throw bad(`'${param}' must be an object`, param);
  if (v.type === "text") return undefined;
  if (v.type === "json_object") return { type: "object" };
  if (v.type === "json_schema") {
    // Chat Completions nests it under json_schema.schema; the Responses API puts schema on the format
    const holder = isObj(v.json_schema) ? v.json_schema : v;
    if (!isObj(holder.schema)) throw bad(`'${param}.json_schema.schema' must be a JSON Schema object`, `${param}.json_schema.schema`);
    return holder.schema;
  }
  throw bad(`'${param}.type' must be "text", "json_object" or "json_schema"`, `${param}.type`);
}

/** Sampling fields common to the OpenAI routes; llama.cpp extras (top_k, min_p, repeat_penalty)
 * too. Their types and ranges are the body schemas' (schemas/api/protocols.ts); frequency and
 * presence penalties are accepted there for compatibility (the local engine has none). */
export function parseSampling(b: Record<string, any>): SamplingOverrides {
  return present({ temperature: b.temperature, topP: b.top_p, topK: b.top_k, minP: b.min_p, repeatPenalty: b.repeat_penalty, seed: b.seed, stop: stopList(b.stop) });
}

export function checkUnsupported(b: Record<string, any>): void {
  if (typeof b.n === "number" && b.n > 1) throw bad("'n' greater than 1 is not supported", "n");
  if (b.logprobs === true) throw bad("'logprobs' is not supported", "logprobs");
  if (b.best_of !== undefined && b.best_of !== null && b.best_of !== 1) throw bad("'best_of' is not supported", "best_of");
}

export function parseCommon(b: Record<string, any>, agentId: string | undefined) {
  // types checked by the body schema; null is absent
  const stream: boolean = b.stream ?? false;
  const includeUsage: boolean = b.stream_options?.include_usage ?? false;
  const sessionId: string | undefined = b.session_id ?? undefined;
  const metadata: Record<string, unknown> | undefined = b.metadata ?? undefined;
  const user: string | undefined = b.user ?? undefined;
  return {
    stream,
    includeUsage,
    ...(sessionId !== undefined ? { sessionId } : {}),
    ...(metadata || user ? { metadata: { ...(metadata ?? {}), ...(user ? { user } : {}) } } : {}),
    ...(agentId ? { agentId } : {}),
  };
}

export function parseChatRequest(b: Record<string, any>, agentId?: string): OpenAIChatParsed {
  const model: string = b.model;
  const messages = parseMessages(b.messages);
  checkUnsupported(b);
  const maxTokens: number | undefined = b.max_completion_tokens ?? b.max_tokens ?? undefined;
  const tools = parseTools(b.tools);
  const toolChoice = parseToolChoice(b.tool_choice, tools);
  const responseSchema = parseResponseFormat(b.response_format);
  const { includeUsage, ...common } = parseCommon(b, agentId);
  const req: ChatRequest = {
    model,
    messages,
    sampling: parseSampling(b),
    ...(maxTokens !== undefined ? { maxTokens } : {}),
    ...(b.max_completion_tokens != null ? { maxTokensField: "max_completion_tokens" as const } : {}),
    ...(tools ? { tools } : {}),
    ...(toolChoice !== undefined ? { toolChoice } : {}),
    ...(responseSchema ? { responseSchema } : {}),
    ...common,
  };
  return { req, includeUsage };
}
