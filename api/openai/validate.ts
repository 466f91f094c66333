// Small field checks shared by the protocol request transforms (OpenAI, Anthropic, Ollama), for
// what lies below the body schemas (schemas/api/protocols.ts: top-level types and ranges are
// theirs): message parts, tool calls, tools. Each throws a 400 invalid_request SvcError naming the
// offending field; the router renders it in its protocol's shape.
import { uniqueId } from "../../engines/ids";
import { SvcError } from "../../engines/errors";
import type { ToolDef } from "../../engines/chat/types";

export const bad = (message: string, param: string | null = null) => new SvcError("invalid", "invalid_request", message, param);

const isObj = (v: unknown): v is Record<string, any> => v !== null && typeof v === "object" && !Array.isArray(v);
export { isObj };

export function reqString(v: unknown, param: string): string {
  if (typeof v !== "string" || v.length === 0) throw bad(`'${param}' is required and must be a non-empty string`, param);
  return v;
}

export function optString(v: unknown, param: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string") throw bad(`'${param}' must be a string`, param);
  return v;
}

export function optBool(v: unknown, param: string): boolean | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "boolean") throw bad(`'${param}' must be a boolean`, param);
  return v;
}

/** stop as a list without empty strings; its type and length are the body schemas'. */
export function stopList(v: string | string[] | null | undefined): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  const out = (typeof v === "string" ? [v] : v).filter((s) => s.length > 0);
  return out.length ? out : undefined;
}

/** The fields that were sent (null is absent): omitted values are never filled with a default. */
export function present<T extends Record<string, unknown>>(o: T): Partial<T> {
  // a loop, not entries/filter/fromEntries: this runs on every inference request
  const out: Partial<T> = {};
  for (const k in o) if (o[k] !== undefined && o[k] !== null) out[k] = o[k];
  return out;
}

export function optObject(v: unknown, param: string): Record<string, any> | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isObj(v)) throw bad(`'${param}' must be an object`, param);
  return v;
}

const TOOL_NAME = /^[a-zA-Z0-9_.:-]{1,128}$/;

/** One function tool: name, description, JSON Schema of its arguments object. */
export function toolDef(name: unknown, description: unknown, parameters: unknown, param: string): ToolDef {
  if (typeof name !== "string" || !TOOL_NAME.test(name)) {
    throw bad(`'${param}.name' must be 1-128 letters, digits, '_', '-', '.' or ':'`, `${param}.name`);
  }
  const desc = optString(description, `${param}.description`);
  let schema: Record<string, unknown> | undefined;
  if (parameters !== undefined && parameters !== null) {
    if (!isObj(parameters)) throw bad(`'${param}.parameters' must be a JSON Schema object`, `${param}.parameters`);
    schema = parameters;
  }
  return { name, ...(desc !== undefined ? { description: desc } : {}), ...(schema ? { parameters: schema } : {}) };
}

export function checkUniqueTools(tools: ToolDef[], param: string): void {
  const seen = new Set<string>();
  for (const t of tools) {
    if (seen.has(t.name)) throw bad(`tool names must be unique; '${t.name}' appears twice`, param);
    seen.add(t.name);
  }
}

/** A named tool choice must name an offered tool; a forcing choice needs tools at all. */
export function checkToolChoice(choice: ToolDef[] | undefined, tc: "none" | "auto" | "required" | { name: string } | undefined, param: string): void {
  if (tc === undefined || tc === "none" || tc === "auto") return;
  const tools = choice ?? [];
  if (tools.length === 0) throw bad(`'${param}' requires 'tools' to be set`, param);
  if (typeof tc === "object" && !tools.some((t) => t.name === tc.name)) {
    throw bad(`'${param}' names the tool '${tc.name}', which is not among 'tools'`, param);
  }
}

/** Tool arguments as JSON text (protocols that carry objects, Anthropic and Ollama). */
export function argsToJson(v: unknown, param: string): string {
  if (v === undefined || v === null) return "{}";
  if (typeof v === "string") return v; // some clients already send JSON text
  if (!isObj(v)) throw bad(`'${param}' must be an object`, param);
  return JSON.stringify(v);
}

/** Tool arguments JSON text as an object (for protocols that carry objects); unparseable text
 * (possible only if generation was cut off) comes back as {}. */
export function argsToObject(json: string): Record<string, unknown> {
  try {
    const v = JSON.parse(json || "{}");
    return isObj(v) ? v : {};
  } catch {
    return {};
  }
}

/** Response / message / call ids: prefix + 24 random hex digits (chatcmpl-…, msg_…, call_…). */
export function newId(prefix: string): string {
  return uniqueId(prefix);
}
