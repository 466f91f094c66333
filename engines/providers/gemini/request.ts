// Gemini request (generateContent; Vertex AI takes the same body): system messages become
// systemInstruction, assistant turns role "model", tool calls functionCall parts and tool results
// functionResponse parts (named after the call they answer: Gemini matches results by name).
import type { ChatMessage, ChatRequest, ContentPart } from "../../chat/types";
import type { RouteTarget } from "../types";
import { toolImages, toolImagesLabel, urlMediaType } from "../../chat/images";
import { signatureOf } from "./thought-signature";

type Part = Record<string, unknown>;

/** Gemini takes an OpenAPI subset of JSON Schema: drop the keywords it refuses. */
export function geminiSchema(s: unknown): unknown {
  if (Array.isArray(s)) return s.map(geminiSchema);
  if (!s || typeof s !== "object") return s;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(s)) {
    if (k === "$schema" || k === "additionalProperties" || k === "$id" || k === "$defs") continue;
    out[k] = geminiSchema(v);
  }
  return out;
}

function parseArgs(text: string): Record<string, unknown> {
  try {
    const v = text ? JSON.parse(text) : {};
    return v && typeof v === "object" && !Array.isArray(v) ? v : { value: v };
  } catch {
    return {};
  }
}

/** A text or image part: bytes as inlineData, an http(s) URL as fileData. */
function part(p: ContentPart): Part {
  if (p.type === "text") return { text: p.text };
  if (p.image.type === "base64") return { inlineData: { mimeType: p.image.mediaType, data: p.image.data } };
  return { fileData: { mimeType: urlMediaType(p.image.url), fileUri: p.image.url } };
}

function toContents(msgs: ChatMessage[]): { system?: string; contents: Array<{ role: string; parts: Part[] }> } {
  const system: string[] = [];
  const contents: Array<{ role: string; parts: Part[] }> = [];
  const callNames = new Map<string, string>();
  const push = (role: "user" | "model", part: Part) => {
    const last = contents[contents.length - 1];
    if (last && last.role === role) last.parts.push(part);
    else contents.push({ role, parts: [part] });
  };
  let held: Part[] = []; // tool results' images, after the functionResponses they belong to
  const flush = () => {
    for (const p of held) push("user", p);
    held = [];
  };
  for (const m of msgs) {
    if (m.role !== "tool") flush();
    if (m.role === "system") system.push(m.content);
    else if (m.role === "assistant") {
      if (m.content) push("model", { text: m.content });
      for (const c of m.toolCalls ?? []) {
        callNames.set(c.id, c.name);
        const sig = signatureOf(c.id); // Gemini 3 wants its signature back on the call
        push("model", { functionCall: { name: c.name, args: parseArgs(c.arguments) }, ...(sig ? { thoughtSignature: sig } : {}) });
      }
    } else if (m.role === "tool") {
      const name = m.name ?? callNames.get(m.toolCallId ?? "") ?? "tool";
      let response: unknown;
      try {
        response = JSON.parse(m.content);
      } catch {
        response = undefined;
      }
      if (!response || typeof response !== "object" || Array.isArray(response)) response = { result: m.content };
      push("user", { functionResponse: { name, response } });
      // A functionResponse holds JSON; its `parts` (FunctionResponsePart, inline bytes) are
      // documented for Gemini 3 models only, so a tool result's images go as parts of the same
      // user turn, after the run of functionResponses, each tool's after a text naming its call.
      const images = toolImages(m);
      if (images.length) held.push(part(toolImagesLabel(m)), ...images.map(part));
    } else if (m.parts) {
      for (const p of m.parts) push("user", part(p));
    } else push("user", { text: m.content });
  }
  flush();
  return { system: system.length ? system.join("\n\n") : undefined, contents };
}

export function toGeminiBody(_t: RouteTarget, req: ChatRequest): Record<string, unknown> {
  const msgs = req.prompt !== undefined && req.messages.length === 0 ? [{ role: "user" as const, content: req.prompt }] : req.messages;
  const { system, contents } = toContents(msgs);
  const body: Record<string, unknown> = { contents };
  if (system) body.systemInstruction = { parts: [{ text: system }] };
  const g: Record<string, unknown> = {};
  const s = req.sampling;
  if (req.maxTokens !== undefined) g.maxOutputTokens = req.maxTokens;
  if (s.temperature !== undefined) g.temperature = s.temperature;
  if (s.topP !== undefined) g.topP = s.topP;
  if (s.topK !== undefined) g.topK = s.topK;
  if (s.seed !== undefined) g.seed = s.seed;
  if (s.stop?.length) g.stopSequences = s.stop;
  if (req.responseSchema) {
    g.responseMimeType = "application/json";
    g.responseSchema = geminiSchema(req.responseSchema);
  }
  if (Object.keys(g).length) body.generationConfig = g;
  if (req.tools?.length) {
    body.tools = [{ functionDeclarations: req.tools.map((x) => ({ name: x.name, description: x.description, parameters: geminiSchema(x.parameters ?? { type: "object", properties: {} }) })) }];
    const tc = req.toolChoice;
    if (tc === "required") body.toolConfig = { functionCallingConfig: { mode: "ANY" } };
    else if (tc === "none") body.toolConfig = { functionCallingConfig: { mode: "NONE" } };
    else if (tc === "auto") body.toolConfig = { functionCallingConfig: { mode: "AUTO" } };
    else if (tc && typeof tc === "object") body.toolConfig = { functionCallingConfig: { mode: "ANY", allowedFunctionNames: [tc.name] } };
  }
  return body;
}
