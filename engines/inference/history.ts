// Converts svc's chat messages to node-llama-cpp's chat history, so the model's own chat
// wrapper (ChatML, Llama 3, Jinja template, ...) renders the prompt.
import type { ChatHistoryItem, ChatModelFunctionCall, ChatModelResponse } from "node-llama-cpp";
import type { ChatMessage, ToolDef } from "../chat/types";

function parseArgs(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The history ends with a model response to generate into: an empty one, or the last assistant
 * message (continued, as a prefill) when the conversation ends with one or with tool results. */
export function toChatHistory(messages: ChatMessage[]): ChatHistoryItem[] {
  const out: ChatHistoryItem[] = [];
  // tool results fill the call they answer, wherever it is
  const pendingCalls = new Map<string, ChatModelFunctionCall>();
  const unanswered: ChatModelFunctionCall[] = [];
  for (const m of messages) {
    switch (m.role) {
      case "system":
        out.push({ type: "system", text: m.content });
        break;
      case "user":
        out.push({ type: "user", text: m.content });
        break;
      case "assistant": {
        const response: ChatModelResponse["response"] = [];
        if (m.content) response.push(m.content);
        for (const c of m.toolCalls ?? []) {
          const call: ChatModelFunctionCall = { type: "functionCall", name: c.name, params: parseArgs(c.arguments), result: "" };
          pendingCalls.set(c.id, call);
          unanswered.push(call);
          response.push(call);
        }
        out.push({ type: "model", response });
        break;
      }
      case "tool": {
        const call = (m.toolCallId && pendingCalls.get(m.toolCallId)) || unanswered[0];
        if (call) {
          call.result = parseArgs(m.content);
          unanswered.splice(unanswered.indexOf(call), 1);
        } else {
          // a result with no call to attach to: keep its content visible to the model
          out.push({ type: "user", text: `Tool result${m.name ? ` (${m.name})` : ""}: ${m.content}` });
        }
        break;
      }
    }
  }
  const last = out[out.length - 1];
  if (last?.type !== "model") out.push({ type: "model", response: [] });
  return out;
}

/** Instruction prepended when a tool call is forced by grammar: the grammar guarantees the
 * shape, this tells a real model what the call is for. */
export function forcedToolInstruction(tools: ToolDef[], wrapped: boolean): ChatHistoryItem {
  const docs = tools
    .map((t) => `- ${t.name}${t.description ? `: ${t.description}` : ""}\n  parameters: ${JSON.stringify(t.parameters ?? { type: "object" })}`)
    .join("\n");
  const how = wrapped
    ? 'Reply with only a JSON object {"name": <function name>, "arguments": <arguments object>}.'
    : "Reply with only the JSON object of its arguments.";
  return { type: "system", text: `Call ${wrapped ? "one of these functions" : "this function"} now.\n${docs}\n${how}` };
}
