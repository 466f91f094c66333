// The one internal chat shape every protocol adapter (api/openai, api/anthropic, api/ollama)
// translates to and from, and every provider (local GGUF, OpenAI-compatible, Anthropic) serves.

export type Role = "system" | "user" | "assistant" | "tool";

export interface ToolCall {
  id: string;
  name: string;
  /** JSON text of the arguments, exactly as generated. */
  arguments: string;
}

/** An image a client sent: its bytes (base64, with the media type), or an http(s) URL passed on to
 * vendors that fetch URLs themselves. svc never fetches an image URL. */
export type ImageSource = { type: "base64"; mediaType: string; data: string } | { type: "url"; url: string };

/** One part of a message's content, in order (see ChatMessage.parts). */
export type ContentPart = { type: "text"; text: string } | { type: "image"; image: ImageSource; detail?: ImageDetail };

/** OpenAI's image detail (resolution and so cost), passed on to OpenAI-shaped upstreams only. */
export type ImageDetail = "low" | "high" | "auto";

export interface ChatMessage {
  role: Role;
  /** the message's text (with images: the text parts joined by newlines) */
  content: string;
  /** set only when the message holds images: its parts in order, text included (engines/chat/images.ts).
   * Text-only code reads `content`; providers that take images read `parts`. */
  parts?: ContentPart[];
  /** assistant messages that called tools */
  toolCalls?: ToolCall[];
  /** tool result messages: the call they answer */
  toolCallId?: string;
  name?: string;
}

export interface ToolDef {
  name: string;
  description?: string;
  /** JSON Schema of the arguments object */
  parameters?: Record<string, unknown>;
}

/** none: never call; auto: model decides; required: must call some tool; {name}: must call that tool */
export type ToolChoice = "none" | "auto" | "required" | { name: string };

/** Sampling values the caller set explicitly. An omitted value stays undefined: it is resolved
 * from the Model manifest, then server defaults, never filled with a client default. */
export interface SamplingOverrides {
  temperature?: number;
  topP?: number;
  topK?: number;
  minP?: number;
  seed?: number;
  repeatPenalty?: number;
  stop?: string[];
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  /** prompt for raw text completion (/v1/completions, /api/generate with raw) instead of messages */
  prompt?: string;
  maxTokens?: number;
  /** the client named the bound max_completion_tokens (OpenAI's newer field, the only one its
   * reasoning models accept): an OpenAI-compatible upstream gets it under that name too */
  maxTokensField?: "max_completion_tokens";
  sampling: SamplingOverrides;
  tools?: ToolDef[];
  toolChoice?: ToolChoice;
  /** JSON Schema the output must satisfy (response_format json_schema / ollama format) */
  responseSchema?: Record<string, unknown>;
  stream: boolean;
  sessionId?: string;
  /** caller metadata for attribution (gateway audit) */
  metadata?: Record<string, unknown>;
  /** X-Svc-Agent-Id, attribution only */
  agentId?: string;
}

export type FinishReason = "stop" | "length" | "tool_calls";

export interface Usage {
  promptTokens: number;
  completionTokens: number;
}

/** Events a provider yields while generating; non-streaming callers fold them (see collect.ts). */
export type ChatEvent =
  | { type: "text"; text: string }
  /** a tool call begins (index is its position in this response) */
  | { type: "tool_call_start"; index: number; id: string; name: string }
  /** a piece of that call's arguments JSON */
  | { type: "tool_call_delta"; index: number; argumentsDelta: string }
  /** stopSequence: which of the request's stop sequences ended the text (finishReason "stop"),
   * when the engine or upstream says so */
  | { type: "done"; finishReason: FinishReason; usage: Usage; stopSequence?: string };

export interface EmbeddingRequest {
  model: string;
  input: string[];
}

export interface EmbeddingResult {
  vectors: number[][];
  promptTokens: number;
}
