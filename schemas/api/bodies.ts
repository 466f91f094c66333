// JSON Schemas (TypeBox) of the HTTP API's request bodies that the OpenAPI document describes and
// that are not manifest kinds or key bodies. They state the accepted shape for clients; the
// protocol routes still check the fine print (ranges, cross-field rules) in api/.
import { Type, type TSchema } from "@sinclair/typebox";

const Str = (description?: string) => Type.String(description ? { description } : {});
const open = (props: Record<string, TSchema>, description?: string) => Type.Object(props, { additionalProperties: true, ...(description ? { description } : {}) });

export const Message = open({ role: Str("system | user | assistant | tool"), content: Type.Union([Type.String(), Type.Array(Type.Unknown()), Type.Null()]) });
const Sampling = {
  max_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
  temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
  top_p: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  stream: Type.Optional(Type.Boolean()),
  stop: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())])),
};
const Metadata = Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: "free-form; workflow_id and user_id attribute usage; routing: {strategy, fallback}" }));

export const ChatCompletionBody = open(
  { model: Str("a model id from GET /v1/models"), messages: Type.Array(Message), ...Sampling, tools: Type.Optional(Type.Array(Type.Unknown())), tool_choice: Type.Optional(Type.Unknown()), response_format: Type.Optional(Type.Unknown()), session_id: Type.Optional(Type.String()), metadata: Metadata },
  "OpenAI Chat Completions request",
);
export const CompletionBody = open({ model: Str(), prompt: Type.Union([Type.String(), Type.Array(Type.String())]), ...Sampling, metadata: Metadata }, "OpenAI text completions request");
export const ResponsesBody = open({ model: Str(), input: Type.Union([Type.String(), Type.Array(Type.Unknown())]), instructions: Type.Optional(Type.String()), max_output_tokens: Type.Optional(Type.Integer({ minimum: 1 })), stream: Type.Optional(Type.Boolean()), tools: Type.Optional(Type.Array(Type.Unknown())), metadata: Metadata }, "OpenAI Responses request");
export const EmbeddingsBody = open({ model: Str(), input: Type.Union([Type.String(), Type.Array(Type.String())]) }, "OpenAI embeddings request");
export const MessagesBody = open({ model: Str(), messages: Type.Array(Message), max_tokens: Type.Integer({ minimum: 1 }), system: Type.Optional(Type.Unknown()), stream: Type.Optional(Type.Boolean()), tools: Type.Optional(Type.Array(Type.Unknown())), stop_sequences: Type.Optional(Type.Array(Type.String())) }, "Anthropic Messages request");
export const CountTokensBody = open({ model: Str(), messages: Type.Array(Message), system: Type.Optional(Type.Unknown()), tools: Type.Optional(Type.Array(Type.Unknown())) }, "Anthropic count_tokens request");
export const OllamaChatBody = open({ model: Str(), messages: Type.Optional(Type.Array(Message)), stream: Type.Optional(Type.Boolean()), options: Type.Optional(Type.Record(Type.String(), Type.Unknown())), format: Type.Optional(Type.Unknown()), keep_alive: Type.Optional(Type.Union([Type.String(), Type.Number()])) }, "Ollama /api/chat request");
export const OllamaGenerateBody = open({ model: Str(), prompt: Type.Optional(Type.String()), stream: Type.Optional(Type.Boolean()), options: Type.Optional(Type.Record(Type.String(), Type.Unknown())), keep_alive: Type.Optional(Type.Union([Type.String(), Type.Number()])) }, "Ollama /api/generate request");
export const OllamaEmbedBody = open({ model: Str(), input: Type.Union([Type.String(), Type.Array(Type.String())]) }, "Ollama /api/embed request");
export const OllamaEmbeddingsBody = open({ model: Str(), prompt: Type.String() }, "Ollama /api/embeddings request (legacy)");
export const ShowBody = open({ model: Str() }, "Ollama /api/show request");

export const AgentRunBody = open({ prompt: Type.Optional(Type.String()), input: Type.Optional(Type.Unknown()), messages: Type.Optional(Type.Array(Message)), model: Type.Optional(Type.String()), tool_choice: Type.Optional(Type.Unknown()), stream: Type.Optional(Type.Boolean()), conversation_id: Type.Optional(Type.String()) }, "agent input");
export const DispatchBody = open({ prompt: Str(), title: Type.Optional(Type.String()), model: Type.Optional(Type.String()), tool_choice: Type.Optional(Type.Unknown()) }, "detached task");
export const ClarifyBody = open({ response: Type.Optional(Type.String({ description: "an answer, or approve | deny for an approval" })), approve: Type.Optional(Type.Boolean()) });
export const ToolCallBody = Type.Object({ name: Str("a tool name from GET /mcp/tools"), arguments: Type.Optional(Type.Record(Type.String(), Type.Unknown())) });
export const MemoryIngestBody = open({
  agent_id: Str(),
  conversation_id: Str(),
  turns: Type.Array(Type.Object({ user: Type.String(), assistant: Type.String() })),
  session_date: Type.Optional(Type.String()),
  skip_extraction: Type.Optional(Type.Boolean()),
  project: Type.Optional(Type.String()),
  flush: Type.Optional(Type.Boolean()),
});
export const MemoryFlushBody = open({ agent_id: Str(), conversation_id: Type.Optional(Type.String()) });
export const AgentOnlyBody = open({ agent_id: Type.Optional(Type.String()) });
export const ConfigBody = open(
  { document: Type.Optional(Type.String({ description: "YAML, one or more documents" })), documents: Type.Optional(Type.Array(Type.Unknown())), plan: Type.Optional(Type.Unknown()), source: Type.Optional(Type.String()), prune: Type.Optional(Type.Boolean()), allowPruneAll: Type.Optional(Type.Boolean()), confirm: Type.Optional(Type.Boolean()), wait: Type.Optional(Type.Boolean()), waitTimeoutSeconds: Type.Optional(Type.Number()) },
  "a document, documents or a saved plan, with plan/apply options",
);
export const JobIdBody = Type.Object({ id: Str("the job id (X-Svc-Job-Id of the request)") });
export const AnyObject = open({});
