// Request transform: OpenAI Responses body -> internal ChatRequest. `input` is a string or a list
// of items (messages, function_call, function_call_output); `instructions` becomes the system
// message. Nothing is stored server-side, so previous_response_id is refused.
import type { ChatMessage, ChatRequest, ToolDef } from "../../engines/chat/types";
import { checkUnsupported, parseCommon, parseResponseFormat, parseSampling, parseToolChoice, textContent } from "./chat-request";
import { messageWithImages } from "./content";
import { bad, checkUniqueTools, isObj, reqString, toolDef } from "./validate";

/** Request fields a response object echoes back. */
export interface ResponsesEcho {
  instructions: string | null;
  max_output_tokens: number | null;
  temperature: number | null;
  top_p: number | null;
  tool_choice: unknown;
  tools: unknown[];
  metadata: Record<string, unknown>;
  parallel_tool_calls: boolean;
  text: { format: Record<string, unknown> };
}

export interface ResponsesParsed {
  req: ChatRequest;
  echo: ResponsesEcho;
}

const MSG_ROLES = new Set(["user", "system", "developer", "assistant"]);

function parseInput(v: unknown, instructions: string | undefined): ChatMessage[] {
  const out: ChatMessage[] = [];
  if (instructions) out.push({ role: "system", content: instructions });
  if (typeof v === "string") {
    out.push({ role: "user", content: v });
    return out;
  }
  if (!Array.isArray(v) || v.length === 0) throw bad("'input' must be a string or a non-empty array of input items", "input");
  v.forEach((it, i) => {
    const p = `input[${i}]`;
    if (!isObj(it)) throw bad(`'${p}' must be an input item object`, p);
    const type = it.type ?? (typeof it.role === "string" ? "message" : undefined);
    if (type === "message") {
      if (!MSG_ROLES.has(it.role)) throw bad(`'${p}.role' must be one of user, system, developer, assistant`, `${p}.role`);
      const role = it.role === "developer" ? "system" : (it.role as ChatMessage["role"]);
      out.push(role === "user" ? messageWithImages(role, it.content, `${p}.content`) : { role, content: textContent(it.content, `${p}.content`) });
    } else if (type === "function_call") {
      const call = {
        id: reqString(it.call_id, `${p}.call_id`),
        name: reqString(it.name, `${p}.name`),
        arguments: typeof it.arguments === "string" ? it.arguments : "{}",
      };
      const last = out[out.length - 1];
      if (last?.role === "assistant") (last.toolCalls ??= []).push(call);
      else out.push({ role: "assistant", content: "", toolCalls: [call] });
    } else if (type === "function_call_output") {
      // a string, or input_text and input_image parts
      out.push(messageWithImages("tool", it.output, `${p}.output`, { toolCallId: reqString(it.call_id, `${p}.call_id`) }));
    } else if (type === "reasoning") {
      // reasoning items from another model's earlier turn carry nothing the local model can use
    } else {
      throw bad(`input item type '${String(type)}' is not supported`, `${p}.type`);
    }
  });
  if (!out.some((m) => m.role !== "system")) throw bad("'input' must contain at least one non-system item", "input");
  return out;
}

function parseResponsesTools(v: unknown): ToolDef[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw bad("'tools' must be an array", "tools");
  const tools = v.map((t, i) => {
    const p = `tools[${i}]`;
    if (!isObj(t) || t.type !== "function") throw bad(`'${p}.type' must be "function"; built-in tools are not available here`, `${p}.type`);
    return toolDef(t.name, t.description, t.parameters, p);
  });
  checkUniqueTools(tools, "tools");
  return tools.length ? tools : undefined;
}

export function parseResponsesRequest(b: Record<string, any>, agentId?: string): ResponsesParsed {
  const model: string = b.model;
  if (b.previous_response_id !== undefined && b.previous_response_id !== null) {
    throw bad("'previous_response_id' is not supported: responses are not stored; send the whole conversation in 'input'", "previous_response_id");
  }
  const instructions: string | undefined = b.instructions ?? undefined;
  const messages = parseInput(b.input, instructions);
  checkUnsupported(b);
  const maxTokens: number | undefined = b.max_output_tokens ?? undefined;
  const tools = parseResponsesTools(b.tools);
  const toolChoice = parseToolChoice(b.tool_choice, tools);
  const text: Record<string, any> | undefined = b.text ?? undefined;
  const responseSchema = parseResponseFormat(text?.format, "text.format");
  const parallel: boolean | undefined = b.parallel_tool_calls ?? undefined;
  const { includeUsage: _ignored, ...common } = parseCommon({ ...b, stream_options: undefined }, agentId);
  const sampling = parseSampling({ temperature: b.temperature, top_p: b.top_p, top_k: b.top_k, seed: b.seed });
  const req: ChatRequest = {
    model,
    messages,
    sampling,
    ...(maxTokens !== undefined ? { maxTokens } : {}),
    ...(tools ? { tools } : {}),
    ...(toolChoice !== undefined ? { toolChoice } : {}),
    ...(responseSchema ? { responseSchema } : {}),
    ...common,
  };
  return {
    req,
    echo: {
      instructions: instructions ?? null,
      max_output_tokens: maxTokens ?? null,
      temperature: sampling.temperature ?? null,
      top_p: sampling.topP ?? null,
      tool_choice: b.tool_choice ?? "auto",
      tools: Array.isArray(b.tools) ? b.tools : [],
      metadata: (common.metadata as Record<string, unknown>) ?? {},
      parallel_tool_calls: parallel ?? true,
      text: { format: isObj(text?.format) ? text!.format : { type: "text" } },
    },
  };
}
