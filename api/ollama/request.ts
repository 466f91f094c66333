// Request transforms: Ollama /api/chat, /api/generate and /api/embed bodies -> internal shapes.
// `options` carries sampling (temperature, top_p, top_k, min_p, num_predict, seed, stop,
// repeat_penalty); `format` is "json" or a JSON Schema; `stream` defaults to true.
import type { ChatMessage, ChatRequest, ContentPart, EmbeddingRequest, ToolCall, ToolDef } from "../../engines/chat/types";
import { imageFromBase64, messageOfParts } from "../../engines/chat/images";
import { embeddingInputs } from "../openai/embeddings";
import {
  argsToJson, bad, checkUniqueTools, isObj, optString, present, reqString, stopList, toolDef,
} from "../openai/validate";

/** options: types and ranges are the body schema's (schemas/api/protocols.ts). */
function parseOptions(v: Record<string, any> | null | undefined) {
  const o = v ?? {};
  // num_predict -1: no limit, -2: fill the context (both: leave it to the model's configuration)
  const maxTokens: number | undefined = o.num_predict > 0 ? o.num_predict : undefined;
  const sampling = present({ temperature: o.temperature, topP: o.top_p, topK: o.top_k, minP: o.min_p, repeatPenalty: o.repeat_penalty, seed: o.seed, stop: stopList(o.stop) });
  return { sampling, maxTokens };
}

function parseFormat(v: unknown): Record<string, unknown> | undefined {
  if (v === undefined || v === null || v === "") return undefined;
  if (v === "json") return { type: "object" };
  if (isObj(v)) return v;
  throw bad(`'format' must be "json" or a JSON Schema object`, "format");
}

function parseTools(v: unknown): ToolDef[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw bad("'tools' must be an array", "tools");
  const tools = v.map((t, i) => {
    const p = `tools[${i}]`;
    if (!isObj(t) || (t.type !== undefined && t.type !== "function") || !isObj(t.function)) {
      throw bad(`'${p}' must be {type: "function", function: {name, description?, parameters?}}`, p);
    }
    return toolDef(t.function.name, t.function.description, t.function.parameters, `${p}.function`);
  });
  checkUniqueTools(tools, "tools");
  return tools.length ? tools : undefined;
}

const ROLES = new Set(["system", "user", "assistant", "tool"]);

/** Ollama's `images`: base64 strings (the media type is read from the bytes). */
function ollamaImages(v: unknown, param: string): ContentPart[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw bad(`'${param}' must be an array of base64 strings`, param);
  return v.map((x, i) => ({ type: "image" as const, image: imageFromBase64(x, undefined, `${param}[${i}]`) }));
}

function parseMessages(v: unknown): ChatMessage[] {
  if (!Array.isArray(v) || v.length === 0) throw bad("'messages' must be a non-empty array", "messages");
  const out: ChatMessage[] = [];
  let n = 0;
  const pending: ToolCall[] = []; // calls not answered yet, to give tool results their call id
  v.forEach((m, i) => {
    const p = `messages[${i}]`;
    if (!isObj(m)) throw bad(`'${p}' must be an object with role and content`, p);
    if (typeof m.role !== "string" || !ROLES.has(m.role)) throw bad(`'${p}.role' must be one of system, user, assistant, tool`, `${p}.role`);
    if (m.content !== undefined && m.content !== null && typeof m.content !== "string") throw bad(`'${p}.content' must be a string`, `${p}.content`);
    const content = (m.content as string | undefined) ?? "";
    const images = ollamaImages(m.images, `${p}.images`);
    if (images.length && m.role !== "user" && m.role !== "tool") throw bad(`'${p}.images': images belong to user and tool messages`, `${p}.images`);
    if (m.role === "assistant") {
      const calls: ToolCall[] = [];
      if (m.tool_calls !== undefined && m.tool_calls !== null) {
        if (!Array.isArray(m.tool_calls)) throw bad(`'${p}.tool_calls' must be an array`, `${p}.tool_calls`);
        m.tool_calls.forEach((c: unknown, j: number) => {
          const q = `${p}.tool_calls[${j}]`;
          if (!isObj(c) || !isObj(c.function)) throw bad(`'${q}' must be {function: {name, arguments}}`, q);
          calls.push({
            id: typeof c.id === "string" && c.id ? c.id : `call_${n++}`,
            name: reqString(c.function.name, `${q}.function.name`),
            arguments: argsToJson(c.function.arguments, `${q}.function.arguments`),
          });
        });
      }
      pending.push(...calls);
      out.push({ role: "assistant", content, ...(calls.length ? { toolCalls: calls } : {}) });
    } else if (m.role === "tool") {
      const name = optString(m.tool_name, `${p}.tool_name`) ?? optString(m.name, `${p}.name`);
      const at = name ? pending.findIndex((c) => c.name === name) : 0;
      const call = at >= 0 ? pending.splice(at, 1)[0] : undefined;
      const extra = { toolCallId: call?.id ?? (typeof m.tool_call_id === "string" ? m.tool_call_id : `call_${n++}`), ...(name ? { name } : {}) };
      // a tool result's images (a screenshot tool, say) travel with it
      out.push(images.length ? messageOfParts("tool", [...(content ? [{ type: "text" as const, text: content }] : []), ...images], extra) : { role: "tool", content, ...extra });
    } else {
      out.push(images.length ? messageOfParts("user", [...(content ? [{ type: "text" as const, text: content }] : []), ...images]) : { role: m.role as "system" | "user", content });
    }
  });
  return out;
}

export function parseOllamaChat(b: Record<string, any>, agentId?: string): ChatRequest {
  const model: string = b.model;
  const messages = parseMessages(b.messages);
  const tools = parseTools(b.tools);
  const { sampling, maxTokens } = parseOptions(b.options);
  const responseSchema = parseFormat(b.format);
  return {
    model,
    messages,
    sampling,
    ...(maxTokens !== undefined ? { maxTokens } : {}),
    ...(tools ? { tools, toolChoice: "auto" as const } : {}),
    ...(responseSchema ? { responseSchema } : {}),
    stream: b.stream ?? true,
    ...(agentId ? { agentId } : {}),
  };
}

/** /api/generate. `prompt` absent or empty only loads the model (Ollama's convention): null. */
export function parseOllamaGenerate(b: Record<string, any>, agentId?: string): { req: ChatRequest; loadOnly: boolean } {
  const model: string = b.model;
  const prompt: string = b.prompt ?? "";
  const system: string | undefined = b.system ?? undefined;
  const raw: boolean = b.raw ?? false;
  if (typeof b.suffix === "string" && b.suffix) throw bad("'suffix' (fill-in-the-middle) is not supported", "suffix");
  const images = ollamaImages(b.images, "images");
  if (images.length && raw) throw bad("'images' cannot be used with raw prompts", "images");
  const { sampling, maxTokens } = parseOptions(b.options);
  const responseSchema = parseFormat(b.format);
  const user = images.length ? messageOfParts("user", [...(prompt ? [{ type: "text" as const, text: prompt }] : []), ...images]) : { role: "user" as const, content: prompt };
  const messages: ChatMessage[] = raw ? [] : [...(system ? [{ role: "system" as const, content: system }] : []), user];
  const req: ChatRequest = {
    model,
    messages,
    ...(raw ? { prompt } : {}),
    sampling,
    ...(maxTokens !== undefined ? { maxTokens } : {}),
    ...(responseSchema ? { responseSchema } : {}),
    stream: b.stream ?? true,
    ...(agentId ? { agentId } : {}),
  };
  return { req, loadOnly: prompt === "" };
}

// Ollama parses a keep_alive string with Go's time.ParseDuration: one or more <number><unit>
// parts, so "1h30m" and "5m0s" (Go's own Duration.String() form, what Go clients send) are valid
// too, not only a single "5m". A bare number of seconds ("300", "-1") is accepted as before.
const GO_DURATION = /^[-+]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$/;
const BARE_SECONDS = /^[-+]?\d+(?:\.\d+)?$/;

/** Ollama's keep_alive: seconds (number) or a Go-style duration ("5m", "1h30m", "0", "-1"). Only
 * zero has an effect here (unload the model after answering); a model's idle unload is otherwise
 * set by its Model manifest (idleUnloadSeconds). Returns true for zero. */
export function keepAliveZero(v: unknown): boolean {
  if (v === undefined || v === null) return false;
  if (typeof v === "number" && Number.isFinite(v)) return v === 0;
  if (typeof v === "string") {
    const s = v.trim();
    // zero when no part has a non-zero digit ("0", "0s", "0m0s"); units hold no digits
    if (GO_DURATION.test(s) || BARE_SECONDS.test(s)) return !/[1-9]/.test(s);
  }
  throw bad(`'keep_alive' must be a duration such as "5m", "0" or "-1", or a number of seconds`, "keep_alive");
}

/** /api/chat with no messages only loads (or, with keep_alive 0, unloads) the model. */
export function isLoadOnlyChat(b: Record<string, any>): boolean {
  return b.messages === undefined || b.messages === null || (Array.isArray(b.messages) && b.messages.length === 0);
}

/** /api/embed (input) and the older /api/embeddings (prompt). */
export function parseOllamaEmbed(b: Record<string, any>, legacy = false): EmbeddingRequest {
  const model: string = b.model;
  if (legacy) return { model, input: [b.prompt] };
  return { model, input: embeddingInputs(b.input) };
}
