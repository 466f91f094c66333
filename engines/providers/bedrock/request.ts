// Bedrock Converse request body (the same for /converse and /converse-stream): system messages
// become `system` blocks, tool calls toolUse blocks, tool results toolResult blocks in a user
// turn; sampling goes to inferenceConfig; tools to toolConfig (Converse has no "none" choice:
// tool_choice none sends no tools).
import type { ChatMessage, ChatRequest, ContentPart, ImageSource } from "../../chat/types";
import type { RouteTarget } from "../types";
import { refuseImageUrls } from "../../chat/images";

type Block = Record<string, unknown>;

function parseArgs(text: string): unknown {
  try {
    return text ? JSON.parse(text) : {};
  } catch {
    return {};
  }
}

/** A text or image block; Converse's image bytes are base64 in JSON (refuseImageUrls ran before,
 * so every image here is bytes). */
function block(p: ContentPart): Block {
  if (p.type === "text") return { text: p.text };
  const img = p.image as Extract<ImageSource, { type: "base64" }>;
  return { image: { format: img.mediaType.slice("image/".length), source: { bytes: img.data } } };
}

function toMessages(msgs: ChatMessage[]): { system: Block[]; messages: Array<{ role: string; content: Block[] }> } {
  const system: Block[] = [];
  const messages: Array<{ role: string; content: Block[] }> = [];
  const push = (role: "user" | "assistant", b: Block) => {
    const last = messages[messages.length - 1];
    if (last && last.role === role) last.content.push(b);
    else messages.push({ role, content: [b] });
  };
  for (const m of msgs) {
    if (m.role === "system") {
      if (m.content) system.push({ text: m.content });
    } else if (m.role === "assistant") {
      if (m.content) push("assistant", { text: m.content });
      for (const c of m.toolCalls ?? []) push("assistant", { toolUse: { toolUseId: c.id, name: c.name, input: parseArgs(c.arguments) } });
    } else if (m.role === "tool") {
      // ToolResultContentBlock takes text and image blocks alike
      push("user", { toolResult: { toolUseId: m.toolCallId ?? "", content: m.parts ? m.parts.map(block) : [{ text: m.content }] } });
    } else if (m.parts) {
      for (const p of m.parts) push("user", block(p));
    } else push("user", { text: m.content });
  }
  return { system, messages };
}

export function toConverseBody(t: RouteTarget, req: ChatRequest): Record<string, unknown> {
  refuseImageUrls(req, req.model, `provider ${t.provider}, type bedrock`);
  const msgs = req.prompt !== undefined && req.messages.length === 0 ? [{ role: "user" as const, content: req.prompt }] : req.messages;
  const { system, messages } = toMessages(msgs);
  const body: Record<string, unknown> = { messages };
  if (system.length) body.system = system;
  const ic: Record<string, unknown> = {};
  const s = req.sampling;
  if (req.maxTokens !== undefined) ic.maxTokens = req.maxTokens;
  if (s.temperature !== undefined) ic.temperature = s.temperature;
  if (s.topP !== undefined) ic.topP = s.topP;
  if (s.stop?.length) ic.stopSequences = s.stop;
  if (Object.keys(ic).length) body.inferenceConfig = ic;
  if (req.tools?.length && req.toolChoice !== "none") {
    const tools = req.tools.map((x) => ({ toolSpec: { name: x.name, description: x.description ?? x.name, inputSchema: { json: x.parameters ?? { type: "object", properties: {} } } } }));
    const tc = req.toolChoice;
    const toolChoice = tc === "required" ? { any: {} } : tc && typeof tc === "object" ? { tool: { name: tc.name } } : tc === "auto" ? { auto: {} } : undefined;
    body.toolConfig = toolChoice ? { tools, toolChoice } : { tools };
  }
  return body;
}
